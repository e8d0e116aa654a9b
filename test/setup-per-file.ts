/**
 * Runs before each test file: what shared helper modules made for the file (test/support/file-cleanup.ts) is removed
 * after it, whether or not the file itself cleans up.
 */
import { afterAll } from 'vitest';
import { removeFileDirs } from './support/file-cleanup.js';

afterAll(removeFileDirs);
