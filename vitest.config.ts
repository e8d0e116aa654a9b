import { defineConfig } from 'vitest/config';
import SlowFilesFirst from './test/slow-files-first.js';

export default defineConfig({
  test: {
    // Compiles the CLI (dist/) that the end-to-end and reliability tests spawn, once per run; installs the servers
    // that come from system packages where it can (test/support/system-packages.ts).
    globalSetup: ['test/global-setup.ts'],
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    sequence: { sequencer: SlowFilesFirst },
    pool: 'forks',
    // Every test file in a process of its own: nothing a file leaves in module state (registered secrets, DuckDB
    // instances, held locks, armed failpoints) reaches another file.
    isolate: true,
    // 2 cores here, but a quarter of the suite's time is spent waiting (on the emulator's latency, Postgres, child
    // processes): a third worker fills it.
    maxWorkers: Number(process.env.SLUICE_WORKERS ?? 3),
    setupFiles: ['test/setup-per-file.ts'],
  },
});
