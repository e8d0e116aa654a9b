/**
 * How long a client keeps trying a service it has never reached. A refused connection or an unknown host at the
 * start of a run is almost always a wrong base_url or a service that is down: the full retry policy (minutes of
 * backoff, then the engine's own retries of the unit) only delays the answer. But a nightly job may also start
 * during a short blip (a restart, a failover), so the first contact gets a few quick tries within about ten seconds,
 * then fails with `UnreachableServiceError`. Once the service has answered anything, refused connections are a
 * blip of a service known to exist, and the client's full policy applies again.
 */
import { RetryPolicy } from '../core/retry.js';

/** Tries in all at first contact, the first included: waits of up to 0.5, 1, 2 and 3 s with the default backoff. */
export const FIRST_CONTACT_ATTEMPTS = 5;
/** No retry is started that would end later than this after the first try: with process start, about 10 s. */
export const FIRST_CONTACT_BUDGET_MS = 8_000;
const FIRST_CONTACT_MAX_WAIT_MS = 3_000;

/** The first-contact policy derived from the client's own: never more tries or longer waits than it allows. */
export function firstContactPolicy(policy: RetryPolicy): RetryPolicy {
  return new RetryPolicy({
    attempts: Math.min(policy.attempts, FIRST_CONTACT_ATTEMPTS),
    baseMs: policy.baseMs,
    maxMs: Math.min(policy.maxMs, FIRST_CONTACT_MAX_WAIT_MS),
  });
}

/** Whether a retry after `delayMs` still fits the first-contact budget, `elapsedMs` after the first try started. */
export function withinFirstContactBudget(elapsedMs: number, delayMs: number): boolean {
  return elapsedMs + delayMs <= FIRST_CONTACT_BUDGET_MS;
}
