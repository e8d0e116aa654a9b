/**
 * A 404 for an id the user configured: the service's own words ("snapshot not found") do not say which option
 * holds the id, so the error names it.
 */
import { ServiceError } from '../client/index.js';
import { SluiceError } from '../core/errors.js';

/** `err` as a SluiceError naming `option` when it is a 404; anything else unchanged. */
export function unknownId(err: unknown, what: string, option: string, hint: string): unknown {
  if (!(err instanceof ServiceError) || err.status !== 404) return err;
  return new SluiceError(`${what} does not exist (${err.message})`, { hint: `check ${option}: ${hint}`, cause: err });
}
