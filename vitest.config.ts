import { defineConfig } from 'vitest/config';
import SlowFilesFirst from './test/slow-files-first.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Compiles the CLI (dist/) that the end-to-end and reliability tests spawn, once per run.
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    sequence: { sequencer: SlowFilesFirst },
    pool: 'forks',
    // 2 cores here: more workers only contend.
    maxWorkers: 2,
  },
});
