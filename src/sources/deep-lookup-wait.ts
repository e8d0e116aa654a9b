/**
 * How the deep lookup source waits on the service (preview, request, enrichment): `pollUntil` on the poll policy
 * of its config, bounded by `poll.timeout_s`. One function so the three waits share one cadence and one timeout rule.
 */
import { SluiceError } from '../core/errors.js';
import { notYet, pollPolicy, pollUntil } from '../core/retry.js';
import type { SourceContext } from '../core/types.js';
import type { DeepLookupConfig } from './deep-lookup-schema.js';

export async function waitForLookup(
  poll: DeepLookupConfig['poll'],
  ctx: SourceContext,
  what: string,
  done: () => Promise<boolean>,
  timedOut: () => SluiceError = () =>
    new SluiceError(`timed out waiting for deep lookup ${what}`, {
      hint: 'run the same command again later: the request id is checkpointed and will be reused',
    }),
): Promise<void> {
  await pollUntil(async () => (await done()) || notYet(), {
    policy: pollPolicy(poll.interval_ms, 10_000),
    timeoutMs: poll.timeout_s * 1000,
    timedOut,
    signal: ctx.signal,
  });
}
