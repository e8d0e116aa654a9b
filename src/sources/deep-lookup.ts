/**
 * Deep lookup: preview → trigger (paid) → wait → enrich (paid) → download. The request id is checkpointed the moment
 * the trigger answers and every enrich column once requested, so a rerun never pays twice. `max_cost` is checked
 * before each paid call against the worst case, and again against the service's own bound after the trigger. A
 * request the service no longer knows (expired) is a MissingJobError, for the engine's `resume.on_missing_job`.
 * The parts: config (deep-lookup-schema.ts), cost bounds (deep-lookup-budget.ts), enrichments
 * (deep-lookup-enrich.ts), waiting on the service (deep-lookup-wait.ts).
 */
import { createHash } from 'node:crypto';
import type { z } from 'zod';
import { AmbiguousPaidCallError, ServiceError, type ServiceClient } from '../client/index.js';
import { SluiceError } from '../core/errors.js';
import type { Batch, Source, SourceContext, WorkUnit } from '../core/types.js';
import type { ComponentDef, ComponentDeps } from '../contracts/component.js';
import { decode } from '../decode/index.js';
import { countBytes, downloadBounds } from './bytes.js';
import { PRICE_PER_EXTRA_COLUMN, checkBudget, triggerBound } from './deep-lookup-budget.js';
import { enrichColumn } from './deep-lookup-enrich.js';
import { deepLookupSchema, type DeepLookupConfig } from './deep-lookup-schema.js';
import { waitForLookup } from './deep-lookup-wait.js';
import { rawDecodeOptions } from './raw-decode.js';
import { formatMoney, parseMoney } from './money.js';
import { unknownId } from './unknown-id.js';
import { keyRefused } from './preflight.js';
import { missingJob, readSavedJob, saveJob, type SavedJob } from './saved-job.js';

export { deepLookupSchema, type DeepLookupConfig } from './deep-lookup-schema.js';

class DeepLookupSource implements Source {
  // One download unit per request: nothing to read side by side beyond what the engine's default allows.
  readonly concurrency = 4;
  readonly incremental = false;

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
    await waitForLookup(this.cfg.poll, ctx, `request ${requestId}`, async () => {
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
    // Charged per matched record (docs/service.md §4.4): this run's bill if it triggered the request.
    if (matched !== undefined) await ctx.paid.charged(requestId, matched);
    for (const e of this.cfg.enrich) await enrichColumn(this.cfg, client, ctx, requestId, e);
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
    const bound = triggerBound(this.cfg);
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
    checkBudget(this.cfg, bound, 0, `trigger the request${this.cfg.enrich.length ? ' and enrich it' : ''}`);
    let previewId = this.cfg.preview_id;
    if (!previewId && this.cfg.query) {
      const preview = await client.deepLookup.createPreview(this.cfg.query);
      previewId = preview.preview_id;
      await waitForLookup(this.cfg.poll, ctx, `preview ${previewId}`, async () => {
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
    const job = await saveJob(ctx, this.stateKey, { kind: 'trigger', for: 'deep lookup request' }, res.request_id);
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
