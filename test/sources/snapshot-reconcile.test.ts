/**
 * A filter call whose answer is lost starts at most one job: the snapshot source, and `startFilterJobOnce` under it,
 * resolve the ambiguity with the dataset's snapshot list, in the same run and in a rerun, against the emulator.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { AmbiguousPaidCallError, ServiceError, type ServiceClient } from '../../src/client/index.js';
import { SluiceError } from '../../src/core/errors.js';
import type { Logger, Source } from '../../src/core/types.js';
import { COMPANY_PROFILES_ID } from '../../src/emulator/data/company-profiles.js';
import type { FaultConfig } from '../../src/emulator/server.js';
import { MemoryStateStore } from '../../src/state/state-store.js';
import { snapshotSchema, snapshotSource } from '../../src/sources/snapshot.js';
import {
  CRASH_WINDOW_MS,
  SERVICE_CLOCK_MARGIN_MS,
  startFilterJobOnce,
  type FilterAttempt,
} from '../../src/sources/snapshot-reconcile.js';
import { sourceContext, startHarness, type Harness } from './crawl-harness.js';

const FILTER_ROUTE = 'POST /datasets/filter';
const LIST_ROUTE = 'GET /datasets/snapshots';
const FILTER = { name: 'followers', operator: '>', value: 0 };
const KEY = 'snapshot:job:test:attempt';

const open: Harness[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((h) => h.close()));
});

/** The first filter call gets `kind`; everything else is answered normally. */
function firstFilterCall(kind: string): FaultConfig {
  return { rules: [{ route: FILTER_ROUTE, rate: 1, max_per_route: 1, faults: { [kind]: 1 } }] } as FaultConfig;
}

async function harness(opts: { faults?: FaultConfig; timeScale?: number } = {}): Promise<Harness> {
  const h = await startHarness({
    seed: 3,
    size: 300,
    timeScale: opts.timeScale ?? 200,
    ...(opts.faults && { faults: opts.faults }),
  });
  open.push(h);
  return h;
}

function recordingLog(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const push = (level: string) => (m: string) => lines.push(`${level}: ${m}`);
  return { lines, debug: () => undefined, info: push('info'), warn: push('warn'), error: push('error') };
}

function source(h: Harness, extra: Record<string, unknown> = {}): Source {
  const cfg = snapshotSchema.parse({
    type: 'snapshot',
    dataset_id: COMPANY_PROFILES_ID,
    filter: FILTER,
    records_limit: 200,
    download: { format: 'jsonl', compress: true, batch_size: 1000 },
    poll: { interval_ms: 10, timeout_s: 30 },
    ...extra,
  });
  return snapshotSource.create(cfg, h.deps);
}

const ambiguous = (): AmbiguousPaidCallError =>
  new AmbiguousPaidCallError({
    method: 'POST',
    path: '/datasets/filter',
    status: 0,
    serviceMessage: 'ECONNRESET: other side closed',
  });

const paid = (h: Harness): number => h.emu.stats.paid.filter ?? 0;
const calls = (h: Harness, route: string): number => h.emu.stats.routes[route] ?? 0;

/** The harness's client, except that listing the dataset's snapshots is refused with `status`. */
function listRefused(h: Harness, status: number, serviceMessage: string): ServiceClient {
  const refusal = new ServiceError({ method: 'GET', path: '/datasets/snapshots', status, serviceMessage });
  return {
    ...h.client,
    datasets: { ...h.client.datasets, snapshots: () => Promise.reject(refusal) },
  } as ServiceClient;
}

describe('snapshot source: a lost filter answer', () => {
  it('the job ran but its answer was lost (reset_after): the run adopts it from the list, paying once', async () => {
    const h = await harness({ faults: firstFilterCall('reset_after') });
    const log = recordingLog();
    const state = new MemoryStateStore();
    const units = await source(h).plan(sourceContext(h, state, { log }));

    expect(h.emu.stats.faults.reset_after).toBe(1);
    expect(paid(h)).toBe(1);
    expect(calls(h, FILTER_ROUTE)).toBe(1);
    const [adopted] = (await h.client.datasets.snapshots(COMPANY_PROFILES_ID)).snapshots;
    expect(units[0]?.params.snapshot_id).toBe(adopted!.id);
    expect(log.lines.join('\n')).toMatch(
      new RegExp(`recovered the lost answer of the filter call: snapshot ${adopted!.id}`),
    );
    // Settled: the job id is checkpointed and no attempt is left pending.
    expect([...state.data.keys()].filter((k) => k.endsWith(':attempt'))).toEqual([]);
    // Checkpointed as a saved job (sources/saved-job.ts): its id, when and by which run it started.
    const jobs = [...state.data.entries()].filter(([k]) => /^snapshot:job:[0-9a-f]+$/.test(k)).map(([, v]) => v);
    expect(jobs).toEqual([expect.objectContaining({ id: adopted!.id, started_at: expect.any(String) })]);
  });

  it('the service failed before starting the job (500): the list shows nothing new, so it is called once more', async () => {
    const h = await harness({ faults: firstFilterCall('500') });
    const log = recordingLog();
    const units = await source(h).plan(sourceContext(h, new MemoryStateStore(), { log }));
    expect(calls(h, FILTER_ROUTE)).toBe(2);
    expect(paid(h)).toBe(1);
    expect(units.length).toBeGreaterThan(0);
    expect(log.lines.join('\n')).toMatch(/started no job/);
  });

  it('a refusal the service did answer (unknown dataset) leaves no attempt pending', async () => {
    const h = await harness();
    const state = new MemoryStateStore();
    const err = await source(h, { dataset_id: 'gd_nosuchdataset1' })
      .plan(sourceContext(h, state))
      .catch((e: unknown) => e);
    expect((err as Error).message).toMatch(/dataset gd_nosuchdataset1 does not exist/);
    expect([...state.data.keys()].filter((k) => k.endsWith(':attempt'))).toEqual([]);
  });

  it('every call loses its answer and starts nothing (reset_before): gives up after 3 calls, paying nothing', async () => {
    const h = await harness({
      faults: { rules: [{ route: FILTER_ROUTE, rate: 1, faults: { reset_before: 1 } }] } as FaultConfig,
    });
    const state = new MemoryStateStore();
    const err = await source(h)
      .plan(sourceContext(h, state))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SluiceError);
    expect((err as SluiceError).message).toMatch(/failed 3 times without an answer, and the service started no job/);
    expect((err as SluiceError).hint).toMatch(/run the same command again later/);
    expect(calls(h, FILTER_ROUTE)).toBe(3);
    expect(paid(h)).toBe(0);
    expect([...state.data.keys()]).toEqual([]);
  });

  it('plan with an unresolved attempt in state makes no list call and no paid call, and says what a run will do', async () => {
    const h = await harness();
    const pending: FilterAttempt = {
      dataset_id: COMPANY_PROFILES_ID,
      started_at: '2026-01-07T10:00:00.000Z',
      known: [],
    };
    // Whatever the source's attempt key is, it finds this attempt under it.
    const state = new (class extends MemoryStateStore {
      override get<T>(key: string): T | undefined {
        return (key.endsWith(':attempt') ? pending : super.get(key)) as T | undefined;
      }
    })();
    const notes: string[] = [];
    const units = await source(h).plan(
      sourceContext(h, state, { dryRun: true, report: (kind, text) => notes.push(`${kind}: ${text}`) }),
    );
    expect(units).toEqual([]);
    expect(calls(h, LIST_ROUTE)).toBe(0);
    expect(calls(h, FILTER_ROUTE)).toBe(0);
    expect(notes.join('\n')).toMatch(
      /note: the filter call made at 2026-01-07T10:00:00.000Z got no answer: a run first lists the dataset's snapshots/,
    );
  });
});

describe('startFilterJobOnce', () => {
  const start = (client: ServiceClient) => () =>
    client.datasets.filter({ dataset_id: COMPANY_PROFILES_ID, filter: FILTER, records_limit: 10 });

  it('after a crash mid-call, the rerun adopts the job the call started instead of starting another', async () => {
    const h = await harness();
    const state = new MemoryStateStore();
    const ctx = sourceContext(h, state);
    let started = '';
    const crashed = await startFilterJobOnce({
      client: h.client,
      ctx,
      datasetId: COMPANY_PROFILES_ID,
      attemptKey: KEY,
      post: async () => {
        started = (await start(h.client)()).snapshot_id;
        throw new Error('the process was killed before the answer was checkpointed');
      },
    }).catch((e: unknown) => e);
    expect((crashed as Error).message).toMatch(/process was killed/);
    expect(state.get<FilterAttempt>(KEY)).toMatchObject({ dataset_id: COMPANY_PROFILES_ID });

    const id = await startFilterJobOnce({
      client: h.client,
      ctx,
      datasetId: COMPANY_PROFILES_ID,
      attemptKey: KEY,
      post: () => Promise.reject(new Error('must not be called: the job exists')),
    });
    expect(id).toBe(started);
    expect(paid(h)).toBe(1);
  });

  it('a job that appears in the list only a moment after the lost answer is still adopted', async () => {
    const h = await harness();
    let started: Promise<{ snapshot_id: string }> | undefined;
    const id = await startFilterJobOnce({
      client: h.client,
      ctx: sourceContext(h),
      datasetId: COMPANY_PROFILES_ID,
      attemptKey: KEY,
      post: () => {
        // The service is still registering the job when the connection drops.
        started = new Promise((resolve) => setTimeout(() => resolve(start(h.client)()), 300));
        return Promise.reject(ambiguous());
      },
    });
    expect(id).toBe((await started!).snapshot_id);
    expect(paid(h)).toBe(1);
  });

  it('several new snapshots: fails listing them and telling the user to set source.snapshot_id; a rerun too', async () => {
    const h = await harness();
    const state = new MemoryStateStore();
    const ids: string[] = [];
    const run = (): Promise<unknown> =>
      startFilterJobOnce({
        client: h.client,
        ctx: sourceContext(h, state),
        datasetId: COMPANY_PROFILES_ID,
        attemptKey: KEY,
        post: async () => {
          if (ids.length === 0) for (let i = 0; i < 2; i++) ids.push((await start(h.client)()).snapshot_id);
          throw ambiguous();
        },
      }).catch((e: unknown) => e);
    const err = (await run()) as SluiceError;
    expect(err).toBeInstanceOf(SluiceError);
    expect(err.message.split('\n')).toHaveLength(1);
    expect(err.message).toMatch(/2 snapshots started meanwhile could be its job/);
    for (const id of ids) expect(err.message).toContain(id);
    expect(err.hint).toMatch(/set source\.snapshot_id/);
    expect(err.hint).toMatch(/--fresh/);

    const again = (await run()) as SluiceError;
    expect(again.message).toMatch(/2 snapshots started meanwhile/);
    expect(paid(h)).toBe(2);
  });

  it('a snapshot created long after a crashed attempt could have ended is not taken for its job', async () => {
    // 20,000× emulated time: 100 ms of real time is more than the crash window on the service's clock.
    const h = await harness({ timeScale: 20_000 });
    const state = new MemoryStateStore();
    const ctx = sourceContext(h, state);
    await startFilterJobOnce({
      client: h.client,
      ctx,
      datasetId: COMPANY_PROFILES_ID,
      attemptKey: KEY,
      post: () => Promise.reject(new Error('killed before sending')),
    }).catch(() => undefined);
    await new Promise((r) => setTimeout(r, ((CRASH_WINDOW_MS + 2 * SERVICE_CLOCK_MARGIN_MS) / 20_000) * 2));
    const unrelated = (await start(h.client)()).snapshot_id;

    let posted = 0;
    const id = await startFilterJobOnce({
      client: h.client,
      ctx,
      datasetId: COMPANY_PROFILES_ID,
      attemptKey: KEY,
      post: async () => {
        posted++;
        return start(h.client)();
      },
    });
    expect(posted).toBe(1);
    expect(id).not.toBe(unrelated);
  });

  it('when the list cannot be read (403), it warns, and a lost answer then needs a person', async () => {
    const h = await harness();
    const refusing = listRefused(h, 403, 'Access denied.');
    const log = recordingLog();
    const state = new MemoryStateStore();
    const err = (await startFilterJobOnce({
      client: refusing,
      ctx: sourceContext(h, state, { log }),
      datasetId: COMPANY_PROFILES_ID,
      attemptKey: KEY,
      post: () => Promise.reject(ambiguous()),
    }).catch((e: unknown) => e)) as SluiceError;
    expect(log.lines.join('\n')).toMatch(/warn: cannot list the snapshots of gd_\w+ .*403/);
    expect(err.message).toMatch(/got no answer, and the dataset's snapshots cannot be listed/);
    expect(err.hint).toMatch(/set source\.snapshot_id/);
    // Still pending: a rerun must not call again blindly.
    expect(state.get(KEY)).toBeDefined();
    const rerun = (await startFilterJobOnce({
      client: refusing,
      ctx: sourceContext(h, state),
      datasetId: COMPANY_PROFILES_ID,
      attemptKey: KEY,
      post: () => Promise.reject(new Error('must not be called')),
    }).catch((e: unknown) => e)) as SluiceError;
    expect(rerun.message).toMatch(/cannot be listed/);
  });

  it('a key the service does not know (401 on the list) fails at once with that error: no warning, no paid call', async () => {
    const h = await harness();
    const unknownKey = listRefused(h, 401, 'Invalid credentials');
    const log = recordingLog();
    const state = new MemoryStateStore();
    let posted = 0;
    const err = (await startFilterJobOnce({
      client: unknownKey,
      ctx: sourceContext(h, state, { log }),
      datasetId: COMPANY_PROFILES_ID,
      attemptKey: KEY,
      post: () => {
        posted++;
        return Promise.reject(new Error('must not be called'));
      },
    }).catch((e: unknown) => e)) as ServiceError;
    expect(err).toBeInstanceOf(ServiceError);
    expect(err.status).toBe(401);
    expect(posted).toBe(0);
    expect(log.lines.filter((l) => l.startsWith('warn:'))).toEqual([]);
    expect(state.get(KEY)).toBeUndefined();
  });
});
