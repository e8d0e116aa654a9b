/** What a call that must refuse a user's value threw: a SluiceError with the usage exit code (2). */
import { expect } from 'vitest';
import { SluiceError } from '../../src/core/errors.js';

export function refusal(f: () => unknown): SluiceError {
  try {
    f();
  } catch (err) {
    expect(err).toBeInstanceOf(SluiceError);
    expect((err as SluiceError).exitCode).toBe(2);
    return err as SluiceError;
  }
  throw new Error('not refused');
}
