/**
 * The sources' side of incremental loads, against hand-made `ctx.checkpoints`: the snapshot cursor's effective
 * filter and checkpoints, review pages that stop at reviews loaded before, SERP queries fetched recently skipped.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Row, SourceContext, WorkUnit } from '../../src/core/types.js';
import { withCursor } from '../../src/sources/filter.js';
import { compareCursor, lastCursorValue, snapshotSchema, snapshotSource } from '../../src/sources/snapshot.js';
import { reviewsIncremental } from '../../src/sources/crawl/review-pages.js';
import { serpRefresh } from '../../src/sources/serp.js';
import { reviewsSchema } from '../../src/sources/reviews.js';
import { MemoryStateStore } from '../../src/state/state-store.js';
import { sizeAt } from '../../src/emulator/datasets/growth.js';
import { sourceContext, startHarness, type Harness } from './crawl-harness.js';
import { readUnit } from '../support/read-unit.js';

const COMPANIES = 'gd_l1vikfnt1wgvvqz95w';
const leaf = (name: string) => ({ name, operator: 'is_not_null' });

describe('the cursor condition in the filter', () => {
  it('joins a top-level and group, wraps anything else, and refuses a fourth level', () => {
    const and = { operator: 'and', filters: [leaf('a')] };
    expect(withCursor(and, 'timestamp', 'T')).toEqual({
      operator: 'and',
      filters: [leaf('a'), { name: 'timestamp', operator: '>', value: 'T' }],
    });
    expect(withCursor(leaf('a'), 'id', 5)).toEqual({
      operator: 'and',
      filters: [leaf('a'), { name: 'id', operator: '>', value: 5 }],
    });
    expect(withCursor(undefined, 'id', 5)).toEqual({ name: 'id', operator: '>', value: 5 });
    const deep = {
      operator: 'or',
      filters: [{ operator: 'and', filters: [{ operator: 'or', filters: [leaf('a')] }] }],
    };
    expect(withCursor(deep, 'id', 5)).toBeUndefined();
  });

  it('a pipeline whose cursor cannot fit is refused when it loads, at `incremental`', () => {
    const base = {
      type: 'snapshot',
      dataset_id: COMPANIES,
      incremental: { cursor: 'timestamp', initial: '2025-01-01' },
      records_limit: 100,
    };
    const deep = {
      operator: 'or',
      filters: [{ operator: 'and', filters: [{ operator: 'or', filters: [leaf('a')] }] }],
    };
    const refused = snapshotSchema.safeParse({ ...base, filter: deep });
    expect(refused.success).toBe(false);
    expect(refused.error!.issues[0]!.path).toEqual(['incremental']);
    expect(refused.error!.issues[0]!.message).toMatch(/nest 3 levels/);
    expect(snapshotSchema.safeParse(base).success).toBe(true);
    expect(snapshotSchema.safeParse({ ...base, snapshot_id: 'snap_abc' }).success).toBe(false);
  });

  it('the last value is the largest committed, compared as dates, numbers or text, in its canonical form', () => {
    const cps = new Map<string, unknown>([
      ['a', { cursor: 'timestamp', max: '2025-02-10T05:00:00.000Z' }],
      ['b', { cursor: 'timestamp', max: '2025-02-11T01:00:00Z' }],
      ['c', { cursor: 'other', max: '2030-01-01T00:00:00Z' }],
      ['d', { fid: 'x', ids: [] }],
    ]);
    expect(lastCursorValue(cps, 'timestamp')).toBe('2025-02-11T01:00:00.000Z');
    expect(lastCursorValue(new Map(), 'timestamp')).toBeUndefined();
    expect(compareCursor(9, 10)).toBeLessThan(0);
    expect(compareCursor('2025-02-10T05:00:00.000Z', '2025-02-10T04:00:00Z')).toBeGreaterThan(0);
  });
});

describe('incremental snapshots against the emulator', () => {
  let h: Harness;
  const NOW = Date.parse('2025-02-15T00:30:00Z');
  beforeAll(async () => {
    h = await startHarness({ size: 150, timeScale: 50, jobSchedulingMs: 100, now: NOW });
  });
  afterAll(() => h.close());

  const config = snapshotSchema.parse({
    type: 'snapshot',
    dataset_id: COMPANIES,
    filter: leaf('name'),
    incremental: { cursor: 'timestamp', initial: '2025-01-01T00:00:00Z' },
    records_limit: 5000,
    download: { batch_size: 1000 },
    poll: { interval_ms: 10 },
  });

  async function readAll(ctx: SourceContext): Promise<{ rows: Row[]; units: WorkUnit[]; checkpoints: unknown[] }> {
    const source = snapshotSource.create(config, h.deps);
    const units = await source.plan(ctx);
    const rows: Row[] = [];
    const checkpoints: unknown[] = [];
    for (const u of units) {
      const read = await readUnit(source, u, ctx);
      rows.push(...read.rows);
      checkpoints.push(read.end.checkpoint);
    }
    // The checkpoint is the largest value among the rows: only a read in JS tells it, so there is no raw file.
    expect(source.incremental).toBe(true);
    expect(source.rawFile).toBeUndefined();
    return { rows, units, checkpoints };
  }

  it('filters past the last committed value, checkpoints the largest read, and never pays twice in a run', async () => {
    const after = '2025-02-12T00:00:00.000Z';
    const state = new MemoryStateStore();
    const ctx = sourceContext(h, state, {
      checkpoints: new Map([['snapshot:old:jsonl:bs1000:part:1', { cursor: 'timestamp', max: after }]]),
    });
    const first = await readAll(ctx);
    expect(first.rows).toHaveLength(sizeAt(1, 150, NOW, true) - sizeAt(1, 150, Date.parse(after), true));
    const max = first.rows
      .map((r) => r.timestamp as string)
      .sort()
      .at(-1);
    expect(first.checkpoints).toEqual([{ cursor: 'timestamp', max }]);
    expect(h.emu.stats.paid.filter).toBe(1);

    // The same run resumed: its own part is committed now, yet the filter (and the job) stay the same.
    const again = await readAll({ ...ctx, checkpoints: new Map([['x', first.checkpoints[0]]]) });
    expect(again.units.map((u) => u.id)).toEqual(first.units.map((u) => u.id));
    expect(h.emu.stats.paid.filter).toBe(1);
  });

  it('plan shows the effective filter without starting a job', async () => {
    const notes: string[] = [];
    const source = snapshotSource.create(config, h.deps);
    const units = await source.plan(
      sourceContext(h, new MemoryStateStore(), {
        dryRun: true,
        checkpoints: new Map(),
        report: (_kind, text) => notes.push(text),
      }),
    );
    expect(units).toEqual([]);
    expect(notes.join('\n')).toContain(
      'effective filter (incremental on timestamp): {"operator":"and","filters":[{"name":"name","operator":"is_not_null"},{"name":"timestamp","operator":">","value":"2025-01-01T00:00:00.000Z"}]}',
    );
  });

  it('a quiet night: nothing new matches, so no units, no job and nothing paid (the service’s 422 up front)', async () => {
    const paid = h.emu.stats.paid.filter ?? 0;
    const charged = h.emu.stats.recordsCharged;
    // Loaded up to now: the filter's condition `timestamp > now` matches no record yet.
    const ctx = sourceContext(h, new MemoryStateStore(), {
      checkpoints: new Map([['u', { cursor: 'timestamp', max: new Date(NOW).toISOString() }]]),
    });
    const infos: string[] = [];
    ctx.log = { ...ctx.log, info: (m) => infos.push(m) };
    const { units, rows } = await readAll(ctx);
    expect(units).toEqual([]);
    expect(rows).toEqual([]);
    expect(h.emu.stats.paid.filter ?? 0).toBe(paid);
    expect(h.emu.stats.recordsCharged).toBe(charged);
    expect(infos.join('\n')).toMatch(
      /answered 422 "Provided filter did not match any records": no new records, nothing to load; the cursor on timestamp stays/,
    );
  });

  it('a quiet night the other way: a job that ends failed with no_records_found is an empty result too', async () => {
    const live = await startHarness({
      size: 150,
      timeScale: 50,
      jobSchedulingMs: 100,
      now: NOW,
      datasets: { noMatch: 'failed_snapshot' },
    });
    try {
      const source = snapshotSource.create(config, live.deps);
      const ctx = sourceContext(live, new MemoryStateStore(), {
        checkpoints: new Map([['u', { cursor: 'timestamp', max: new Date(NOW).toISOString() }]]),
      });
      expect(await source.plan(ctx)).toEqual([]);
      // The job was started (and is listed as failed), but charged nothing.
      expect(live.emu.stats.paid.filter).toBe(1);
      expect(live.emu.stats.recordsCharged).toBe(0);
    } finally {
      await live.close();
    }
  });

  it('a snapshot without `incremental` keeps no cursor', () => {
    const plain = snapshotSource.create(snapshotSchema.parse({ ...config, incremental: undefined }), h.deps);
    expect(plain.incremental).toBe(false);
    expect(plain.rawFile).toBeDefined();
  });
});

describe('incremental review pages', () => {
  const fid = '0x1:0x2';
  const at = (page: number) => ({ subject: fid, start: (page - 1) * 10, page });
  const review = (id: string, date?: string) => ({ review_id: id, ...(date && { date }) });
  const ctx = (checkpoints: Map<string, unknown>) =>
    sourceContext({ deps: { log: { debug() {}, info() {}, warn() {}, error() {} } }, baseDir: '' }, undefined, {
      checkpoints,
    });

  it('stop at the first review loaded before, keeping only the new ones on that page', async () => {
    const inc = reviewsIncremental(10);
    await inc.plan([fid], ctx(new Map([[`reviews:${fid}:start:0`, { fid, ids: ['r1', 'r2'], newest: '2025-03-01' }]])));
    const page = inc.page(
      { reviews: [review('n2'), review('n1', '2025-03-02'), review('r1'), review('r2')] },
      at(1),
      new Date(),
    );
    expect(page.stop).toBe(true);
    expect((page.payload.reviews as Row[]).map((r) => r.review_id)).toEqual(['n2', 'n1']);
    expect(page.checkpoint).toEqual({ fid, ids: ['n2', 'n1', 'r1', 'r2'], newest: '2025-03-02', loaded: 2 });
    expect(inc.summary!()).toMatch(/1 place\(s\).*page request\(s\) saved/);
  });

  it('stop at a review older than the newest committed one even when its id is not known', async () => {
    const inc = reviewsIncremental(10);
    await inc.plan([fid], ctx(new Map([['u', { fid, ids: ['zz'], newest: '2025-03-01' }]])));
    const page = inc.page({ reviews: [review('n1', '2025-03-01'), review('old', '2025-02-20')] }, at(1), new Date());
    expect(page.stop).toBe(true);
    expect((page.payload.reviews as Row[]).map((r) => r.review_id)).toEqual(['n1']);
  });

  it('go on while every review is new, and crawl a place never loaded in full', async () => {
    const inc = reviewsIncremental(10);
    await inc.plan([fid], ctx(new Map([['u', { fid, ids: ['r1'] }]])));
    const fresh = inc.page({ reviews: [review('n2'), review('n1')] }, at(1), new Date());
    expect(fresh.stop).toBe(false);
    const other = inc.page({ reviews: [review('r1')] }, { subject: '0x3:0x4', start: 0, page: 1 }, new Date());
    expect(other.stop).toBe(false);
    expect(inc.summary!()).toBeUndefined();
  });

  it('a resumed run bounds dates by what was loaded before it, not by the pages it committed itself', async () => {
    const state = new MemoryStateStore();
    const lastNight = { fid, ids: ['old1'], newest: '2025-03-01', loaded: 1 };
    const withState = (checkpoints: Map<string, unknown>) =>
      sourceContext({ deps: { log: { debug() {}, info() {}, warn() {}, error() {} } }, baseDir: '' }, state, {
        checkpoints,
      });
    const first = reviewsIncremental(10);
    await first.plan([fid], withState(new Map([['u', lastNight]])));
    const reviews = Array.from({ length: 10 }, (_, i) => review(`n${i}`, '2025-03-09'));
    const page1 = first.page({ reviews }, at(1), new Date());
    expect(page1.stop).toBe(false);
    expect(page1.checkpoint).toMatchObject({ newest: '2025-03-09', loaded: 11 });
    // Killed after page 1 committed: the resumed run sees page 1's checkpoint, yet page 2's new reviews stay new.
    const resumed = reviewsIncremental(10);
    await resumed.plan(
      [fid],
      withState(
        new Map([
          ['u', lastNight],
          [`reviews:${fid}:start:0`, page1.checkpoint],
        ]),
      ),
    );
    const page2 = resumed.page(
      { reviews: [review('n10', '2025-03-05'), review('old1', '2025-03-01')] },
      at(2),
      new Date(),
    );
    expect((page2.payload.reviews as Row[]).map((r) => r.review_id)).toEqual(['n10']);
    expect(page2.checkpoint).toMatchObject({ loaded: 12 });
  });

  it('need sort: newestFirst', () => {
    const base = { type: 'reviews', zone: 'z', fids: [fid.replace('0x1:0x2', '0xa:0xb')], incremental: true };
    expect(reviewsSchema.safeParse(base).success).toBe(false);
    expect(reviewsSchema.safeParse({ ...base, sort: 'newestFirst' }).success).toBe(true);
  });
});

describe('SERP refresh_after', () => {
  const DAY = 86_400_000;
  const now = Date.parse('2025-03-10T00:00:00Z');
  it('skips queries fetched more recently than refresh_after, and checkpoints each page with its fetch time', () => {
    const inc = serpRefresh('7d');
    const notes: string[] = [];
    const cps = new Map<string, unknown>([
      ['serp:recent:start:0', { query: 'recent', fetched_at: new Date(now - 2 * DAY).toISOString() }],
      ['serp:stale:start:0', { query: 'stale', fetched_at: new Date(now - 8 * DAY).toISOString() }],
      ['serp:stale:start:10', { query: 'stale', fetched_at: new Date(now - 9 * DAY).toISOString() }],
    ]);
    const c = sourceContext(
      { deps: { log: { debug() {}, info() {}, warn() {}, error() {} } }, baseDir: '' },
      undefined,
      {
        checkpoints: cps,
        // The run's clock, far from this machine's: the decision must not read Date.now.
        now: () => now,
        report: (_k, t) => notes.push(t),
      },
    );
    expect(inc.plan(['recent', 'stale', 'new'], c)).toEqual(['stale', 'new']);
    expect(notes).toEqual(['serp: 1 of 3 queries fetched less than 7d ago: not fetched again']);
    const fetched = new Date(now);
    expect(inc.page({ organic: [] }, { subject: 'new', start: 0, page: 1 }, fetched)).toEqual({
      payload: { organic: [] },
      stop: false,
      checkpoint: { query: 'new', fetched_at: fetched.toISOString() },
    });
  });
});
