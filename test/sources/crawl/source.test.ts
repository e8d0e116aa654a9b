/**
 * The one crawl source with a pager written here, whose next-page answers the test decides: what the loop does
 * whatever the strategy — checkpointing successors, keeping a chain whole when a page is read again, planning and
 * discovering from the checkpoint, reporting dry runs — against the real emulator.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Row, Source, SourceContext, WorkUnit } from '../../../src/core/types.js';
import { MemoryStateStore } from '../../../src/state/state-store.js';
import { crawlFields } from '../../../src/sources/crawl/config.js';
import { targetUrl, type PageOutcome, type Pager } from '../../../src/sources/crawl/pager.js';
import { crawlSource } from '../../../src/sources/crawl/source.js';
import { REQUEST_ROUTE, resetStats, sourceContext, startHarness, stats, type Harness } from '../crawl-harness.js';

const STATE_KEY = 'test:discovered';

/** A pager over the emulator's search pages whose `next` answers come from `answers` (else the chain ends). */
function scriptedPager(answers: PageOutcome[]): Pager {
  return {
    name: 'test',
    purpose: 'test page',
    stateKey: STATE_KEY,
    subjectParam: 'topic',
    chainKey: (topic) => `chain:${topic}`,
    unitId: (at) => `test:${at.subject}:start:${at.start}`,
    url: (at) =>
      targetUrl('https://www.google.com', '/search', [
        ['q', at.subject],
        ['start', at.start],
      ]),
    next: async () => answers.shift() ?? { stop: 'last_page' },
    row: (payload, at, fetchedAt) => ({ topic: at.subject, organic: payload.organic, fetched_at: fetchedAt }),
  };
}

describe('crawl source', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ seed: 3 });
  });
  afterAll(() => h.close());

  function source(answers: PageOutcome[], topics = ['tea'], maxPages = 3): Source {
    return crawlSource(
      {
        pager: scriptedPager(answers),
        crawl: z.object(crawlFields).parse({ zone: 'serp_zone', concurrency: 2 }),
        maxPages,
        subjects: async () => topics,
        note: (n) => `${n} topics`,
      },
      h.deps,
    );
  }

  async function read(s: Source, unit: WorkUnit, ctx: SourceContext): Promise<Row[]> {
    const rows: Row[] = [];
    for await (const b of s.read(unit, ctx)) rows.push(...b);
    return rows;
  }

  it('plans page 1 of each subject, with the position in the params under the pager’s subject name', async () => {
    const units = await source([], ['tea', 'coffee']).plan(sourceContext(h));
    expect(units).toEqual([
      {
        id: 'test:tea:start:0',
        params: { topic: 'tea', start: 0, page: 1, engine: 'https://www.google.com', shard_key: 'tea' },
      },
      {
        id: 'test:coffee:start:0',
        params: { topic: 'coffee', start: 0, page: 1, engine: 'https://www.google.com', shard_key: 'coffee' },
      },
    ]);
    expect(source([]).concurrency).toBe(2);
  });

  it('checkpoints the successor while reading, and a page read again keeps the successor first recorded', async () => {
    const ctx = sourceContext(h);
    const s = source([{ next: 10 }, { next: 7 }, { stop: 'empty_page' }]);
    const [first] = await s.plan(ctx);
    const rows = await read(s, first!, ctx);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ topic: 'tea' });
    expect(typeof rows[0]!.fetched_at).toBe('string');
    expect(ctx.state.get(STATE_KEY)).toEqual({ 'chain:tea': [0, 10] });
    expect(s.discover!(first!, ctx).map((u) => u.id)).toEqual(['test:tea:start:10']);

    // A retry of the same page sees another next page: the chain does not fork.
    await read(s, first!, ctx);
    expect(ctx.state.get(STATE_KEY)).toEqual({ 'chain:tea': [0, 10] });
    expect(s.discover!(first!, ctx).map((u) => u.id)).toEqual(['test:tea:start:10']);
    // Nor does a retry that sees the chain end: the recorded page stays planned.
    await read(s, first!, ctx);
    expect(s.discover!(first!, ctx).map((u) => u.id)).toEqual(['test:tea:start:10']);
  });

  it('plans and discovers from the checkpoint on a rerun, within max_pages, fetching nothing to do so', async () => {
    const state = new MemoryStateStore();
    await state.set(STATE_KEY, { 'chain:tea': [0, 10, 20, 30] });
    await resetStats(h);
    const s = source([], ['tea'], 3);
    const ctx = sourceContext(h, state);
    const units = await s.plan(ctx);
    expect(units.map((u) => u.id)).toEqual(['test:tea:start:0', 'test:tea:start:10', 'test:tea:start:20']);
    expect(units.map((u) => u.params.page)).toEqual([1, 2, 3]);
    // Committed earlier, so not read in this run: the checkpoint knows the successor, up to max_pages.
    expect(s.discover!(units[1]!, ctx).map((u) => u.id)).toEqual(['test:tea:start:20']);
    expect(s.discover!(units[2]!, ctx)).toEqual([]);
    expect((await stats(h)).routes[REQUEST_ROUTE] ?? 0).toBe(0);
  });

  it('in a dry run reports each planned request and the note, and fetches nothing', async () => {
    await resetStats(h);
    const reported: { kind: string; text: string }[] = [];
    await source([], ['tea', 'coffee']).plan(
      sourceContext(h, new MemoryStateStore(), { dryRun: true, report: (kind, text) => reported.push({ kind, text }) }),
    );
    expect(reported).toEqual([
      { kind: 'request', text: 'POST /request https://www.google.com/search?q=tea&start=0&brd_json=1' },
      { kind: 'request', text: 'POST /request https://www.google.com/search?q=coffee&start=0&brd_json=1' },
      { kind: 'note', text: '2 topics' },
    ]);
    expect((await stats(h)).routes[REQUEST_ROUTE] ?? 0).toBe(0);
  });
});
