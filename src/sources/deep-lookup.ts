/**
 * Deep lookup: preview → trigger (paid) → wait → enrich (paid) → download. The request id is checkpointed the moment
 * the trigger answers and every enrich column once requested, so a rerun never pays twice. `max_cost` is checked
 * before each paid call against the worst case, and again against the service's own bound after the trigger. A
 * request the service no longer knows (expired) is a MissingJobError, for the engine's `resume.on_missing_job`.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { AmbiguousPaidCallError, ServiceError, type ServiceClient } from '../client/index.js';
import { SluiceError } from '../core/errors.js';
import type { Batch, Source, SourceContext, WorkUnit } from '../core/types.js';
import type { ComponentDef, ComponentDeps } from '../contracts/component.js';
import { decode } from '../decode/index.js';
import { countBytes, downloadBounds } from './bytes.js';
import { rawDecodeOptions } from './raw-decode.js';
import { formatMoney, moneySchema, parseMoney } from './money.js';
import { unknownId } from './unknown-id.js';
import { keyRefused } from './preflight.js';
import { missingJob, readSavedJob, saveJob, type SavedJob } from './saved-job.js';
import { RetryPolicy, notYet, pollPolicy, pollUntil, retrying } from '../core/retry.js';
import { EnrichmentWatch } from './enrichment-watch.js';

/** Published pricing (docs/service.md §4.4): $1.00 per matched record, +$0.05 per extra column per matched record. */
const PRICE_PER_RECORD = 1.0;
const PRICE_PER_EXTRA_COLUMN = 0.05;

export const deepLookupSchema = z
  .object({
    type: z.literal('deep_lookup'),
    query: z
      .string()
      .regex(/^Find all/i, 'a deep lookup query starts with "Find all"')
      .optional()
      .describe('Natural-language query ("Find all …"); a preview is created, then the full request triggered.'),
    preview_id: z
      .string()
      .regex(/^dld_[a-z0-9]{1,60}$/i, 'a preview id looks like dld_…, letters and digits')
      .optional()
      .describe('Trigger from an existing preview (`dld_…`).'),
    request_id: z
      .string()
      .regex(/^ai_[a-z0-9]{1,60}$/i, 'a request id looks like ai_…, letters and digits')
      .optional()
      .describe('Download an existing request (`ai_…`); nothing is triggered.'),
    result_limit: z.number().int().positive().optional().describe('Maximum records the request may match.'),
    enrich: z
      .array(z.object({ column_name: z.string().min(1), query: z.string().min(1) }).strict())
      .default([])
      .describe('Columns to add to the request before downloading (paid per matched record).'),
    max_cost: moneySchema
      .optional()
      .describe('Refuse to trigger or enrich when the worst-case cost would exceed this amount, e.g. "$50.00".'),
    download: z
      .object({ format: z.enum(['json', 'csv']).default('json').describe('Export format (excel is not available).') })
      .strict()
      .default({ format: 'json' }),
    poll: z
      .object({
        interval_ms: z.number().int().min(10).default(1000),
        timeout_s: z.number().positive().default(1800),
        enrich_settle_s: z
          .number()
          .positive()
          .default(60)
          .describe(
            'An enrichment shows no status: it is taken as done when every row has a value, or when some do and ' +
              'none has been added for this long (the service’s time).',
          ),
      })
      .strict()
      .default({ interval_ms: 1000, timeout_s: 1800, enrich_settle_s: 60 })
      .describe('Status polling of the preview, the request and enrichments (each bounded by timeout_s).'),
  })
  .strict()
  .refine((c) => [c.query, c.preview_id, c.request_id].filter((x) => x !== undefined).length === 1, {
    message: 'set exactly one of `query`, `preview_id` or `request_id`',
  });

export type DeepLookupConfig = z.infer<typeof deepLookupSchema>;

class DeepLookupSource implements Source {
  constructor(
    private readonly cfg: DeepLookupConfig,
    private readonly deps: ComponentDeps,
  ) {}

  private get stateKey(): string {
    const h = createHash('sha256')
      .update(JSON.stringify([this.cfg.query, this.cfg.preview_id, this.cfg.result_limit]))
      .digest('hex')
      .slice(0, 16);
    return `deep_lookup:request:${h}`;
  }

  /** Free checks before anything is paid: the key is accepted, and a configured request or preview exists. */
  async preflight(): Promise<void> {
    const client = await this.deps.client();
    const { request_id: requestId, preview_id: previewId } = this.cfg;
    try {
      if (requestId !== undefined) await client.deepLookup.status(requestId);
      else if (previewId !== undefined) await client.deepLookup.getPreview(previewId);
      else await client.datasets.list();
    } catch (err) {
      if (requestId !== undefined)
        throw keyRefused(
          unknownId(
            err,
            `deep lookup request ${requestId}`,
            'source.request_id',
            'the `ai_…` id of a lookup request of this account, or set source.query to start a new lookup',
          ),
        );
      throw keyRefused(
        unknownId(
          err,
          `deep lookup preview ${previewId}`,
          'source.preview_id',
          'the `dld_…` id of a preview of this account, or set source.query',
        ),
      );
    }
  }

  async plan(ctx: SourceContext): Promise<WorkUnit[]> {
    const client = await this.deps.client();
    const job = await this.requestJob(client, ctx);
    const requestId = job?.id;
    if (job === undefined || requestId === undefined) {
      // Only a dry run gets here (it stops before the trigger): the enrichments it would pay for next still count.
      const limit = this.cfg.result_limit;
      for (const e of this.cfg.enrich)
        ctx.report?.(
          'request',
          `POST …/request/<id>/enrich ${e.column_name} (paid${limit !== undefined ? `, up to ${formatMoney(limit * PRICE_PER_EXTRA_COLUMN)}` : ''}: not made by plan)`,
        );
      return [];
    }
    const format = this.cfg.download.format;
    const cols = this.cfg.enrich.map((e) => e.column_name).join(',');
    const unit: WorkUnit = {
      id: `deep_lookup:${requestId}:${format}${cols ? `:+${cols}` : ''}`,
      params: { request_id: requestId },
    };
    if (ctx.dryRun) {
      for (const e of this.cfg.enrich)
        ctx.report?.('request', `POST …/request/${requestId}/enrich ${e.column_name} (paid: not made by plan)`);
      return [unit];
    }
    /** The request's own count of its records: the most its download may hold (bytes.ts). */
    let matched: number | undefined;
    await this.waitFor(ctx, `request ${requestId}`, async () => {
      const s = await client.deepLookup.status(requestId).catch((err: unknown) => {
        if (this.cfg.request_id === undefined) throw missingJob(err, `deep lookup request ${requestId}`, job);
        throw unknownId(
          err,
          `deep lookup request ${requestId}`,
          'source.request_id',
          'the `ai_…` id of a lookup request of this account, or set source.query to start a new lookup',
        );
      });
      if (s.status === 'failed' || s.status === 'cancelled')
        throw new SluiceError(`deep lookup request ${requestId} ended ${s.status}`, {
          hint: 'look at the request in the service; start a new one with `sluice run --fresh`',
        });
      if (s.status === 'completed' && typeof s.matched_records === 'number') matched = s.matched_records;
      return s.status === 'completed';
    });
    for (const e of this.cfg.enrich) await this.enrichColumn(client, ctx, requestId, e);
    // The count is no part of the id: the unit is the same whatever the service says it holds.
    return [matched === undefined ? unit : { ...unit, params: { ...unit.params, matched_records: matched } }];
  }

  /** The request to download: configured, checkpointed by an earlier run, or triggered now (paid). */
  private async requestJob(client: ServiceClient, ctx: SourceContext): Promise<SavedJob | undefined> {
    if (this.cfg.request_id) return { id: this.cfg.request_id };
    const known = readSavedJob(ctx.state, this.stateKey);
    if (known) {
      ctx.log.info(`reusing deep lookup request ${known.id} triggered earlier (no new paid request)`);
      return known;
    }
    const bound = this.triggerBound();
    const attemptKey = `${this.stateKey}:trigger_attempt`;
    const lost = ctx.state.get<{ started_at: string }>(attemptKey);
    if (ctx.dryRun) {
      if (lost)
        ctx.report?.('note', `the trigger made at ${lost.started_at} got no answer: a run refuses to trigger again`);
      ctx.report?.(
        'request',
        `POST /datasets/deep_lookup/v1/trigger (paid${bound !== undefined ? `, up to ${formatMoney(bound)}` : ''}: not made by plan)`,
      );
      return undefined;
    }
    if (ctx.sharded)
      throw new SluiceError(
        'a sharded run (--shard) will not trigger a deep lookup: every shard would pay for its own',
        {
          hint:
            'run `sluice prepare <pipeline.yaml>` once before the shards (they then share its request), or trigger ' +
            'it once and set source.request_id in the sharded pipeline',
        },
      );
    // The service lists no lookup requests, so a lost trigger answer cannot be reconciled here: never pay twice.
    if (lost) throw lostTrigger(lost.started_at);
    this.checkBudget(bound, 0, `trigger the request${this.cfg.enrich.length ? ' and enrich it' : ''}`);
    let previewId = this.cfg.preview_id;
    if (!previewId && this.cfg.query) {
      const preview = await client.deepLookup.createPreview(this.cfg.query);
      previewId = preview.preview_id;
      await this.waitFor(ctx, `preview ${previewId}`, async () => {
        const p = await client.deepLookup.getPreview(previewId!);
        if (p.status === 'failed')
          throw new SluiceError(`deep lookup preview ${previewId} failed`, { hint: 'rephrase the query' });
        if (p.status === 'completed') ctx.log.info(`preview ${previewId}: ${p.sample_data?.length ?? 0} sample rows`);
        return p.status === 'completed';
      });
    }
    const startedAt = new Date().toISOString();
    await ctx.state.set(attemptKey, { started_at: startedAt });
    const res = await client.deepLookup
      .trigger({
        preview_id: previewId!,
        ...(this.cfg.result_limit !== undefined && { result_limit: this.cfg.result_limit }),
      })
      .catch(async (err: unknown) => {
        if (err instanceof AmbiguousPaidCallError) throw lostTrigger(startedAt, err);
        // Any other failure is the service's answer: nothing was started, nothing is pending.
        if (err instanceof ServiceError) await ctx.state.delete(attemptKey);
        throw err;
      });
    const job = await saveJob(ctx.state, this.stateKey, 'deep_lookup', res.request_id);
    await ctx.state.delete(attemptKey);
    ctx.log.info(`deep lookup request ${res.request_id} triggered (service bound ${res.max_cost ?? 'not given'})`);
    if (this.cfg.max_cost && res.max_cost && parseMoney(res.max_cost) > parseMoney(this.cfg.max_cost)) {
      await client.deepLookup.cancel(res.request_id);
      throw new SluiceError(
        `cancelled deep lookup request ${res.request_id}: the service's cost bound ${res.max_cost} exceeds max_cost ${this.cfg.max_cost}`,
        { hint: 'lower result_limit or raise max_cost' },
      );
    }
    return job;
  }

  /**
   * Worst case of the whole source before anything is paid: every allowed record matched, and every enrich column
   * filled for each of them. `max_cost` bounds the run, not each call: a trigger that leaves no budget for the
   * enrichment would spend money on a run that then fails. Unknown without result_limit.
   */
  private triggerBound(): number | undefined {
    if (this.cfg.result_limit === undefined) return undefined;
    return this.cfg.result_limit * (PRICE_PER_RECORD + PRICE_PER_EXTRA_COLUMN * this.cfg.enrich.length);
  }

  private checkBudget(bound: number | undefined, spent: number, what: string): void {
    if (!this.cfg.max_cost) return;
    const max = parseMoney(this.cfg.max_cost);
    if (bound === undefined)
      throw new SluiceError(`refusing to ${what}: its cost cannot be bounded without result_limit`, {
        hint: 'set source.result_limit, or remove max_cost',
      });
    if (spent + bound > max)
      throw new SluiceError(
        `refusing to ${what}: worst-case cost ${formatMoney(spent + bound)} exceeds max_cost ${this.cfg.max_cost}`,
        { hint: 'lower result_limit, drop enrich columns, or raise max_cost' },
      );
  }

  private async enrichColumn(
    client: ServiceClient,
    ctx: SourceContext,
    requestId: string,
    e: { column_name: string; query: string },
  ): Promise<void> {
    const key = `deep_lookup:enrich:${requestId}:${e.column_name}`;
    if (!ctx.state.get(key)) {
      const r = await client.deepLookup.get(requestId);
      if (!(r.columns ?? []).some((c) => c.name === e.column_name)) {
        const matched = Number(r.matched_records ?? (r.data as unknown[] | undefined)?.length ?? 0);
        const spent = r.total_cost ? parseMoney(r.total_cost) : 0;
        this.checkBudget(matched * PRICE_PER_EXTRA_COLUMN, spent, `enrich column ${e.column_name}`);
        await this.enrichOnce(client, ctx, requestId, e);
      }
      await ctx.state.set(key, true);
    }
    // No status to poll: the column's values are watched until they are all in, or stop coming (enrichment-watch.ts).
    const watch = new EnrichmentWatch(
      e.column_name,
      this.cfg.poll.enrich_settle_s * 1000,
      () => client.serviceNow() ?? Date.now(),
    );
    await this.waitFor(
      ctx,
      `enrichment ${e.column_name}`,
      async () => watch.done(await client.deepLookup.get(requestId)),
      () =>
        new SluiceError(
          `the enrichment of column ${e.column_name} of deep lookup request ${requestId} is not done after ` +
            `${this.cfg.poll.timeout_s} s: ${watch.progress()} (the service shows no enrichment status; its ` +
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
  private async enrichOnce(
    client: ServiceClient,
    ctx: SourceContext,
    requestId: string,
    e: { column_name: string; query: string },
  ): Promise<void> {
    await retrying(
      async (call) => {
        try {
          const res = await client.deepLookup.enrich(requestId, [e]);
          ctx.log.info(`enrich ${e.column_name}: ${res.status}, up to ${res.max_additional_cost}`);
          return;
        } catch (err) {
          if (!(err instanceof AmbiguousPaidCallError)) throw err;
          const r = await client.deepLookup.get(requestId);
          if ((r.columns ?? []).some((c) => c.name === e.column_name)) {
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

  private async waitFor(
    ctx: SourceContext,
    what: string,
    done: () => Promise<boolean>,
    timedOut: () => SluiceError = () =>
      new SluiceError(`timed out waiting for deep lookup ${what}`, {
        hint: 'run the same command again later: the request id is checkpointed and will be reused',
      }),
  ): Promise<void> {
    await pollUntil(async () => (await done()) || notYet(), {
      policy: pollPolicy(this.cfg.poll.interval_ms, 10_000),
      timeoutMs: this.cfg.poll.timeout_s * 1000,
      timedOut,
      signal: ctx.signal,
    });
  }

  async *read(unit: WorkUnit, ctx: SourceContext): AsyncIterable<Batch> {
    const client = await this.deps.client();
    const format = this.cfg.download.format;
    const dl = await client.deepLookup.download(unit.params.request_id as string, format, { signal: ctx.signal });
    const matched = unit.params.matched_records;
    yield* decode(countBytes(dl.body, ctx.counters), {
      ...rawDecodeOptions(format),
      unit: unit.id,
      deadLetter: ctx.deadLetter,
      // The request's own count of its records, when its last status gave one (plan).
      bounds: downloadBounds(
        ctx,
        typeof matched === 'number' ? { count: matched, by: "the request's matched_records" } : undefined,
      ),
    });
  }
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

/** A trigger whose answer was lost: only the account holder can tell whether it started a request. */
function lostTrigger(startedAt: string, cause?: unknown): SluiceError {
  return new SluiceError(
    `the deep lookup trigger made at ${startedAt} got no answer: the service may have started a paid request, ` +
      'and it offers no list of requests to check',
    {
      hint:
        'look for a deep lookup request started at that time in the service dashboard; if there is one, replace ' +
        'source.query / source.preview_id with source.request_id: <its ai_… id>; if there is none, run with --fresh to trigger again',
      cause,
    },
  );
}

export const deepLookupSource: ComponentDef<'source', DeepLookupConfig, Source> = {
  kind: 'source',
  type: 'deep_lookup',
  description: 'Deep lookup results: preview → trigger → wait → enrich → download (one work unit).',
  schema: deepLookupSchema as unknown as z.ZodType<DeepLookupConfig>,
  create: (cfg, deps) => new DeepLookupSource(cfg, deps),
};
