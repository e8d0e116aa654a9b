/**
 * Enrich columns of a deep lookup request, each paid once: a column is checkpointed once asked for, a lost answer is
 * resolved by reading the request (which lists a column as soon as it was asked for), and its values are watched
 * until they are all in (enrichment-watch.ts), since the service shows no enrichment status. Apart from the
 * trigger and download flow (deep-lookup.ts) because its lost-answer rules differ from the trigger's: an enrichment
 * can be proved not started, a trigger cannot.
 */
import { AmbiguousPaidCallError, type ServiceClient } from '../client/index.js';
import { SluiceError } from '../core/errors.js';
import type { PaidCall } from '../core/paid-work.js';
import { RetryPolicy, retrying } from '../core/retry.js';
import type { SourceContext } from '../core/types.js';
import { PRICE_PER_EXTRA_COLUMN, checkBudget } from './deep-lookup-budget.js';
import type { DeepLookupConfig } from './deep-lookup-schema.js';
import { waitForLookup } from './deep-lookup-wait.js';
import { EnrichmentWatch } from './enrichment-watch.js';
import { parseMoney } from './money.js';

type EnrichColumn = DeepLookupConfig['enrich'][number];

/** Adds the column (paid, at most once per run and request) and waits until its values are in. */
export async function enrichColumn(
  cfg: DeepLookupConfig,
  client: ServiceClient,
  ctx: SourceContext,
  requestId: string,
  e: EnrichColumn,
): Promise<void> {
  const key = `deep_lookup:enrich:${requestId}:${e.column_name}`;
  if (!ctx.state.get(key)) {
    const r = await client.deepLookup.get(requestId);
    if (!(r.columns ?? []).some((c) => c.name === e.column_name)) {
      const matched = Number(r.matched_records ?? (r.data as unknown[] | undefined)?.length ?? 0);
      const spent = r.total_cost ? parseMoney(r.total_cost) : 0;
      checkBudget(cfg, matched * PRICE_PER_EXTRA_COLUMN, spent, `enrich column ${e.column_name}`);
      await enrichOnce(client, ctx, requestId, e);
    }
    await ctx.state.set(key, true);
  }
  // No status to poll: the column's values are watched until they are all in, or stop coming (enrichment-watch.ts).
  const watch = new EnrichmentWatch(
    e.column_name,
    cfg.poll.enrich_settle_s * 1000,
    () => client.serviceNow() ?? Date.now(),
  );
  await waitForLookup(
    cfg.poll,
    ctx,
    `enrichment ${e.column_name}`,
    async () => watch.done(await client.deepLookup.get(requestId)),
    () =>
      new SluiceError(
        `the enrichment of column ${e.column_name} of deep lookup request ${requestId} is not done after ` +
          `${cfg.poll.timeout_s} s: ${watch.progress()} (the service shows no enrichment status; its ` +
          'progress is seen only in the values)',
        {
          hint:
            'run the same command again later: the request and the enrichment are checkpointed and not paid ' +
            'again; raise source.poll.timeout_s if enrichments take longer',
        },
      ),
  );
  if (watch.settled) ctx.log.info(`enrichment ${e.column_name}: taken as done: ${watch.settled}`);
}

/**
 * The enrich call, resolved when its answer is lost: the request lists a column once it was asked for, so reading
 * the request tells whether the lost call started the enrichment (then it is not paid again) or not (call again).
 */
async function enrichOnce(
  client: ServiceClient,
  ctx: SourceContext,
  requestId: string,
  e: EnrichColumn,
): Promise<void> {
  await retrying(
    async (call) => {
      try {
        const res = await client.deepLookup.enrich(requestId, [e]);
        await ctx.paid.paid(enrichment(e));
        ctx.log.info(`enrich ${e.column_name}: ${res.status}, up to ${res.max_additional_cost}`);
        return;
      } catch (err) {
        if (!(err instanceof AmbiguousPaidCallError)) throw err;
        const r = await client.deepLookup.get(requestId);
        if ((r.columns ?? []).some((c) => c.name === e.column_name)) {
          await ctx.paid.paid(enrichment(e));
          ctx.log.warn(
            `recovered the lost answer of enrich ${e.column_name}: the request has the column (not paid again)`,
          );
          return;
        }
        if (call >= MAX_ENRICH_CALLS)
          throw new SluiceError(
            `enrich ${e.column_name} of ${requestId} failed ${call} times without an answer, and the request has no such column (${err.message})`,
            { hint: 'the service looks unwell: run the same command again later (nothing was paid)', cause: err },
          );
        ctx.log.warn(`enrich ${e.column_name} got no answer and started nothing: calling it again`);
        throw new StartedNothing(err);
      }
    },
    {
      policy: ENRICH_CALLS,
      // Only a call proved to have started nothing is made again, at once: the read that proved it was the wait.
      next: (_call, err) => (err instanceof StartedNothing ? 0 : undefined),
      signal: ctx.signal,
    },
  );
}

/** An enrichment as the ledger of paid work counts it: one per column and request, however its answer came. */
function enrichment(e: EnrichColumn): PaidCall {
  return { kind: 'enrich', for: `enrichment ${e.column_name}` };
}

/** Enrich calls per column and run: the first, and one more after each lost answer that provably started nothing. */
const MAX_ENRICH_CALLS = 3;
const ENRICH_CALLS = new RetryPolicy({ attempts: MAX_ENRICH_CALLS, baseMs: 0, maxMs: 0 });

/** An enrich call whose answer was lost, proved (by reading the request) to have started nothing. */
class StartedNothing extends Error {
  constructor(cause: AmbiguousPaidCallError) {
    super('the enrich call got no answer and started nothing', { cause });
  }
}
