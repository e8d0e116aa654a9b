/**
 * End-to-end helpers: the real `sluice` executable in a child process, pointed at an emulator this test process
 * started, and outputs read back with DuckDB. The child is spawned asynchronously: the emulator lives on this
 * process's event loop, so a blocking spawn would leave every request of the child unanswered. Commands that need
 * no process of their own run the CLI's entry in this process instead (sluiceInProcess): a child's start and its
 * DuckDB load cost more than many a test's own work.
 *
 * The helpers live in harness/ by concern (commands, the service side, workspaces and outputs); this module
 * re-exports them all, so tests import from here.
 */
export * from './harness/commands.js';
export * from './harness/service.js';
export * from './harness/workspace.js';
