/**
 * The page check against the emulator's page-repeat fault (the service answers page 1 again for `start=10`): the
 * repeated page ends its query's crawl with a warning and yields no row, so page 1's results are never written
 * again at page 2's positions.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Row } from '../../../src/core/types.js';
import { serpQueryPlan } from '../../../src/emulator/data/serp.js';
import { driveCrawl } from '../../support/drive-crawl.js';
import { parseSerpUnitId } from '../../../src/sources/crawl/search-pages.js';
import { serpSchema, serpSource } from '../../../src/sources/serp.js';
import { sourceContext, startHarness, stats, type Harness } from '../crawl-harness.js';

const SEED = 19;
const HOST = 'www.google.com';
const QUERIES = Array.from({ length: 200 }, (_, i) => `bakery ${i}`)
  .filter((q) => serpQueryPlan(SEED, HOST, q).total > 30)
  .slice(0, 2);

describe('a page that is not the page asked for', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      seed: SEED,
      faults: { rules: [{ route: 'POST /request', rate: 1, faults: { page_repeat: 1 } }] },
    });
  });
  afterAll(async () => h.close());

  it('ends the query with a warning and loads nothing of it', async () => {
    expect(QUERIES).toHaveLength(2);
    const src = serpSource.create(
      serpSchema.parse({ type: 'serp', zone: 'serp_zone', queries: QUERIES, max_pages: 5 }),
      h.deps,
    );
    const result = await driveCrawl(src, sourceContext(h));
    expect(result.error).toBeUndefined();
    // Page 1 and the repeated "page 2" of each query were read; nothing after.
    const starts = result.committed.map((id) => parseSerpUnitId(id)!.start);
    expect(starts).toHaveLength(4);
    expect(starts.filter((s) => s === 0)).toHaveLength(2);
    for (const id of result.committed) {
      const rows = result.rows.get(id) as Row[];
      expect(rows).toHaveLength(parseSerpUnitId(id)!.start === 0 ? 1 : 0);
    }
    for (const q of QUERIES)
      expect(h.warnings).toContainEqual(
        expect.stringMatching(
          new RegExp(`serp "${q}": the service answered page 1 when page 2 \\(start \\d+\\) was asked for`),
        ),
      );
    expect((await stats(h)).faults.page_repeat).toBe(2);
  });
});
