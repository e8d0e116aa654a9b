import { defineConfig } from 'vitest/config';
import SlowFilesFirst from './test/slow-files-first.js';

/**
 * Files that must have a process of their own: they change state that lives as long as the process.
 */
const PROCESS_TESTS = [
  // Loads example pipelines whose API key (`emulator…`) is then a registered secret for the rest of the process
  // (src/core/redact.ts keeps secrets process-wide on purpose), which would redact this file's expected messages.
  'test/pipeline/preflight.test.ts',
  // Failed once while sharing a worker with other files (a download answered 200 where its fault should answer 202),
  // never alone or in its own process: isolated until the shared state is found.
  'test/client/download-not-ready.test.ts',
];

export default defineConfig({
  test: {
    // Compiles the CLI (dist/) that the end-to-end and reliability tests spawn, once per run.
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    sequence: { sequencer: SlowFilesFirst },
    pool: 'forks',
    // 2 cores here, but a quarter of the suite's time is spent waiting (on the emulator's latency, Postgres, child
    // processes): a third worker fills it.
    maxWorkers: Number(process.env.SLUICE_WORKERS ?? 3),
    projects: [
      {
        extends: true,
        test: {
          name: 'shared',
          // Each project names its files: `extends` would add a shared `include` to the project's own.
          include: ['test/**/*.test.ts'],
          exclude: PROCESS_TESTS,
          // One process runs many files, importing src/, DuckDB and vitest once rather than once per file: that
          // import was over half the CPU the unit files cost, and a sixth of the suite's CPU when the end-to-end
          // files had a process each (8:17 CPU minutes with them here, 9:58 without). Tests that change process
          // state restore it themselves; what shared helpers make for a file is removed after it (the setup file).
          isolate: false,
          setupFiles: ['test/setup-per-file.ts'],
        },
      },
      { extends: true, test: { name: 'process', include: PROCESS_TESTS } },
    ],
  },
});
