/**
 * An id the user configured that the service does not know, or no longer serves: the service's own words ("snapshot
 * not found", "Snapshot is expired") do not say which option holds the id, so the error names it.
 */
import { SluiceError } from '../core/errors.js';
import { isExpired, jobGone } from './saved-job.js';

/** `err` as a SluiceError naming `option` when the service says the id is gone (saved-job.ts `jobGone`); else unchanged. */
export function unknownId(err: unknown, what: string, option: string, hint: string): unknown {
  if (!jobGone(err)) return err;
  return new SluiceError(`${what} ${isExpired(err) ? 'has expired' : 'does not exist'} (${err.message})`, {
    hint: `check ${option}: ${hint}`,
    cause: err,
  });
}
