/**
 * The real shapes of issue 12, end to end through the engine's run API against one emulator that serves them:
 * reviews of the places on map search pages (`organic[].fid`), a chain that finds no place (warned, or failed on
 * request), a snapshot download answering 202 once after ready (waited out), and a search page answered for the
 * wrong `start` (page 1 again): the query ends with a warning and page 1's positions in a merge table stay.
 */
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SluiceError } from '../../src/core/errors.js';
import type { Logger } from '../../src/core/types.js';
import { mapsPlaceFids, serpQueryPlan } from '../../src/emulator/data/serp.js';
import type { EmulatorHandle } from '../../src/emulator/server.js';
import { runPipeline } from '../../src/operations/run.js';
import { loadPipeline } from '../../src/pipeline/load.js';
import { API_KEY, emulator, query, type Obj } from './harness.js';

const SEED = 29;
const HOST = 'www.google.com';
const quiet = { fresh: false, logFormat: 'text', quiet: true, progress: false } as const;

let emu: EmulatorHandle;
let dir: string;
beforeAll(async () => {
  emu = await emulator({
    seed: SEED,
    size: 500,
    timeScale: 2000,
    faults: {
      rules: [
        // Twice, after ready: the download says the snapshot is not ready, as a 202 and then as a 400; the parts
        // count once, as its 400.
        {
          route: 'GET /datasets/snapshots/*/download',
          rate: 1,
          max_per_route: 2,
          retry_after_s: 0,
          faults: { not_ready: 1 },
        },
        { route: 'GET /datasets/snapshots/*/parts', rate: 1, max_per_route: 1, faults: { not_ready: 1 } },
        // Every later search page is answered with page 1.
        { route: 'POST /request', rate: 1, faults: { page_repeat: 1 } },
      ],
    },
  });
  dir = mkdtempSync(path.join(tmpdir(), 'sluice-real-shapes-'));
});
afterAll(async () => emu.close());

/** Writes a pipeline pointed at the test's emulator and runs it in-process; warnings are collected. */
async function run(name: string, body: string): Promise<{ warnings: string[]; records: number }> {
  const file = path.join(dir, `${name}.yaml`);
  writeFileSync(
    file,
    `version: 1\nname: ${name}\nservice:\n  base_url: ${emu.url}\n  api_key: ${API_KEY}\n  retry: { retries: 2, base_delay_ms: 10 }\n${body}`,
  );
  const warnings: string[] = [];
  const log: Logger = {
    debug: () => undefined,
    info: () => undefined,
    warn: (m) => warnings.push(m),
    error: (m) => warnings.push(m),
  };
  const summary = await runPipeline(await loadPipeline(file, {}), quiet, { log });
  return { warnings, records: summary.records };
}

function jsonlRows(out: string): Obj[] {
  const full = path.join(dir, out);
  return readdirSync(full)
    .filter((f) => f.endsWith('.jsonl'))
    .flatMap((f) => readFileSync(path.join(full, f), 'utf8').split('\n').filter(Boolean))
    .map((l) => JSON.parse(l) as Obj);
}

const places = Array.from({ length: 200 }, (_, i) => `inn by the lake ${i}`);
const WITH_PLACES = places.filter((q) => mapsPlaceFids(SEED, HOST, q).length >= 2).slice(0, 2);
const NO_PLACE = places.filter((q) => mapsPlaceFids(SEED, HOST, q).length === 0).slice(0, 2);

describe('places from map search pages', () => {
  it('loads the reviews of every place the map pages list, and names the query that found none', async () => {
    const { warnings } = await run(
      'maps_reviews',
      `source:
  type: reviews
  zone: serp_zone
  from_serp: { search: maps, queries: ${JSON.stringify([...WITH_PLACES, NO_PLACE[0]])} }
  max_pages: 1
transforms:
  - { type: normalize, preset: reviews }
sink: { type: jsonl, path: maps_reviews }
`,
    );
    const expected = WITH_PLACES.flatMap((q) => mapsPlaceFids(SEED, HOST, q));
    const rows = jsonlRows('maps_reviews');
    expect(rows.length).toBeGreaterThan(0);
    // Places without reviews have no rows; every row is of a listed place, and most places have some.
    const fids = new Set(rows.map((r) => r.fid as string));
    for (const f of fids) expect(expected).toContain(f);
    expect(fids.size).toBeGreaterThan(expected.length / 2);
    expect(warnings).toContainEqual(expect.stringContaining(`found no place: ${JSON.stringify(NO_PLACE[0])}`));
  });

  it('a chain that finds no place warns loudly, or fails when on_no_places is fail', async () => {
    const source = (extra: string): string => `source:
  type: reviews
  zone: serp_zone
  from_serp: { search: maps, queries: ${JSON.stringify(NO_PLACE)}${extra} }
sink: { type: jsonl, path: no_places }
`;
    const warned = await run('no_places_warn', source(''));
    expect(warned.records).toBe(0);
    expect(warned.warnings).toContainEqual(expect.stringMatching(/found no place .*NO reviews will be loaded/));

    const err = await run('no_places_fail', source(', on_no_places: fail')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SluiceError);
    expect((err as SluiceError).message).toMatch(/found no place on the maps result pages of any of its 2 queries/);
  });
});

describe('a snapshot saying "not ready" after ready (download: 202, then 400; parts: 400)', () => {
  it('is waited out within the poll timeout and the run loads every record', async () => {
    const before = emu.stats.faults.not_ready ?? 0;
    const { records, warnings } = await run(
      'snapshot_202',
      `source:
  type: snapshot
  dataset_id: gd_l1vikfnt1wgvvqz95w
  filter: { name: followers, operator: '>=', value: 0 }
  records_limit: 30
  download: { format: jsonl, compress: false, batch_size: 1000 }
  poll: { interval_ms: 10, timeout_s: 60 }
sink: { type: jsonl, path: snapshot_202 }
`,
    );
    expect(emu.stats.faults.not_ready).toBe(before + 3);
    expect(records).toBe(30);
    expect(jsonlRows('snapshot_202')).toHaveLength(30);
    expect(warnings).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/parts: not ready yet \("Snapshot is not ready"\); asking again/),
        expect.stringMatching(/part 1: not ready yet \("Snapshot is building.*"\); asking again/),
        expect.stringMatching(/part 1: not ready yet \("Snapshot not ready"\); asking again/),
      ]),
    );
  });
});

describe('a search page that is not the page asked for', () => {
  it('ends the query with a warning and leaves page 1 positions in a merge table as they were', async () => {
    const q = Array.from({ length: 200 }, (_, i) => `espresso bar ${i}`).find(
      (x) => serpQueryPlan(SEED, HOST, x).total > 25,
    )!;
    const duckdb = path.join(dir, 'serp.duckdb');
    const { warnings } = await run(
      'serp_repeat',
      `source: { type: serp, zone: serp_zone, queries: [${JSON.stringify(q)}], max_pages: 3 }
transforms:
  - { type: normalize, preset: serp_organic }
sink: { type: duckdb, path: serp.duckdb, table: serp_organic, write: merge, primary_key: [query, link] }
`,
    );
    expect(warnings).toContainEqual(expect.stringMatching(/answered page 1 when page 2 .*crawl ends here/));
    const rows = await query('SELECT position, rank, start FROM w.serp_organic ORDER BY position', { duckdb });
    const pageSize = serpQueryPlan(SEED, HOST, q).pageSize;
    expect(rows).toHaveLength(pageSize);
    expect(rows.map((r) => r.position)).toEqual(Array.from({ length: pageSize }, (_, i) => i + 1));
    expect(rows.every((r) => r.start === 0)).toBe(true);
  });
});
