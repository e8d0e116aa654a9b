/**
 * Runs before each test file, also in a worker process that runs many files one after another (`isolate: false`):
 * what shared helper modules made for one file (test/support/file-cleanup.ts) is removed after that file, not after
 * the first file that imported the helper.
 */
import { afterAll } from 'vitest';
import { removeFileDirs } from './support/file-cleanup.js';

afterAll(removeFileDirs);
