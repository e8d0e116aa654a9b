/**
 * Runs before each test file, also in a worker process that runs many files one after another (`isolate: false`):
 * what a shared helper module made for one file is cleaned up after that file, not after the first file that
 * imported the helper.
 */
import { afterAll } from 'vitest';
import { removeWorkspaces } from './e2e/harness.js';
import { removeFileDirs } from './support/file-cleanup.js';

afterAll(() => {
  removeWorkspaces();
  removeFileDirs();
});
