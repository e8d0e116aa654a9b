/**
 * Incremental loads of the service's sources over simulated nights: one emulator whose clock is moved between runs
 * through `POST /_emulator/clock`, the CLI run in-process. After every night the table equals a full load of the
 * same data (no row lost, none duplicated), and the emulator's counters show that the night paid only for new data.
 * Backfills of the crawls (`--from`) run between the nights and leave the next night as it would have been.
 * (Snapshots over nights, quiet nights and an expired job included: snapshot-nights.test.ts; the snapshot cursor
 * and the incremental review crawl into every sink: the nightly soak, test/sinks/conformance/soak.test.ts.)
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/cli.js';
import { startEmulator, type EmulatorHandle } from '../../src/emulator/server.js';
import { reviewIdsAt, reviewPagesUntilKnown } from '../../src/emulator/data/reviews.js';
import { memoryIo } from '../cli/memory-io.js';
import { emulatorBill, moveClock, query, type EmulatorBill, type Obj } from './harness.js';

const KEY = 'emulator-key';
const DAY = 86_400_000;
const HOUR = 3_600_000;
/** Half past an hour: records and reviews appear on whole hours, so none appears while a night's runs go on. */
const NIGHT_1 = Date.parse('2025-03-01T02:30:00Z');
const FIDS = ['0x89c259a9b3117469:0xd134e199a405a163', '0x47e66e2964e34e2d:0x8ddca9ee380ef7e0', '0x1:0x2a'];

let emu: EmulatorHandle;
let dir: string;
beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'sluice-nights-'));
  // Emulated time runs 10× faster (filter jobs are quick), slowly enough that a night stays inside its hour.
  emu = await startEmulator({ apiKey: KEY, size: 150, timeScale: 10, jobSchedulingMs: 200, now: NIGHT_1 });
});
afterAll(async () => {
  await emu.close();
  rmSync(dir, { recursive: true, force: true });
});

const clock = (at: number): Promise<void> => moveClock(emu, at);
const counters = (): Promise<EmulatorBill> => emulatorBill(emu);

/** Writes the pipeline and runs it in-process (`args`: e.g. a backfill's --from); returns its log lines (stderr). */
async function run(name: string, body: string[], args: string[] = []): Promise<string> {
  const file = path.join(dir, `${name}.yaml`);
  writeFileSync(
    file,
    [
      'version: 1',
      `name: ${name}`,
      `service: { base_url: "${emu.url}", api_key: "\${SLUICE_API_KEY}" }`,
      ...body,
      '',
    ].join('\n'),
  );
  const io = memoryIo({ SLUICE_API_KEY: KEY });
  const code = await runCli(['run', file, '--no-progress', ...args], io);
  expect(code, io.stderr.join('\n')).toBe(0);
  return io.stderr.join('\n');
}

const db = (name: string): string => path.join(dir, `${name}.duckdb`);
let fullLoads = 0;

describe('incremental loads over simulated nights', () => {
  it('reviews newest first: each night stops at the reviews loaded before', async () => {
    const source = (incremental: boolean): string =>
      `source: { type: reviews, zone: serp_zone, fids: [${FIDS.map((f) => `"${f}"`).join(', ')}], max_pages: 30,` +
      ` sort: newestFirst, incremental: ${incremental} }`;
    const body = (name: string, incremental: boolean): string[] => [
      source(incremental),
      'transforms: [{ type: normalize, preset: reviews }]',
      `sink: { type: duckdb, path: ${name}.duckdb, table: reviews, write: append }`,
    ];
    const ids = (name: string): Promise<string[]> =>
      query('SELECT review_id FROM w.reviews ORDER BY review_id', { duckdb: db(name) }).then((r) =>
        r.map((x) => x.review_id as string),
      );

    const nights = [NIGHT_1, NIGHT_1 + DAY, NIGHT_1 + 5 * DAY];
    for (const [night, at] of nights.entries()) {
      await clock(at);
      const before = await counters();
      const log = await run('nightly_reviews', body('nightly_reviews', true));
      const requests = (await counters()).requests - before.requests;
      const loaded = await ids('nightly_reviews');
      // A full crawl tonight: every review each place shows, its pages (of any size) up to the empty one after.
      const shown = FIDS.map((fid) => reviewIdsAt(1, fid, at));
      expect(loaded, `night ${night + 1}`).toEqual(shown.flat().sort());
      // Append only: a review loaded twice would be a second row.
      expect(new Set(loaded).size).toBe(loaded.length);
      // Tonight's rows are dated on the emulated night, the service's clock: fetched within its hour, and a review
      // without a `date` has its relative `created` ("a week ago") resolved against that fetch time.
      const tonight = await query(
        `SELECT epoch_ms(fetched_at::TIMESTAMP) AS f, epoch_ms(created_at::TIMESTAMP) AS c, date IS NULL AS relative
         FROM w.reviews WHERE fetched_at >= '${new Date(at).toISOString().slice(0, 19)}'`,
        { duckdb: db('nightly_reviews') },
      );
      expect(tonight.length).toBeGreaterThan(0);
      for (const r of tonight) {
        expect(Number(r.f) - at).toSatisfy((d: number) => d >= 0 && d < HOUR);
        expect(Number(r.c)).toBeLessThanOrEqual(Number(r.f));
        if (r.relative) expect(Number(r.f) - Number(r.c)).toBeLessThan(400 * DAY);
      }
      const fullRequests = FIDS.reduce((n, fid, i) => n + reviewPagesUntilKnown(1, fid, shown[i]!.length, Infinity), 0);
      if (night === 0) {
        expect(requests).toBe(fullRequests);
        continue;
      }
      // Per place: the pages holding its new reviews, up to the first page that shows an old one.
      const expected = FIDS.reduce((n, fid, i) => {
        const fresh = shown[i]!.length - reviewIdsAt(1, fid, nights[night - 1]!).length;
        return n + reviewPagesUntilKnown(1, fid, shown[i]!.length, fresh);
      }, 0);
      expect(requests, `night ${night + 1}`).toBe(expected);
      expect(requests).toBeLessThan(fullRequests);
      // What a full crawl would have cost, as the crawl estimates it: pages of about 10 and the empty page after.
      const estimated = shown.reduce((n, list) => n + Math.ceil(list.length / 10) + 1, 0);
      expect(log).toMatch(new RegExp(`about ${estimated - requests} page request\\(s\\) saved`));
    }
  });

  it('SERP with refresh_after: queries fetched within the period are not fetched again, unless a backfill refetches them', async () => {
    const body = (name: string, queries: string[]): string[] => [
      `source: { type: serp, zone: serp_zone, queries: [${queries.map((q) => `"${q}"`).join(', ')}], max_pages: 2, refresh_after: 7d }`,
      'transforms: [{ type: normalize, preset: serp_organic }]',
      `sink: { type: duckdb, path: ${name}.duckdb, table: ranking, write: merge, primary_key: [query, position] }`,
    ];
    const rows = (name: string, where = ''): Promise<Obj[]> =>
      query(`SELECT query, position, link, CAST(fetched_at AS VARCHAR) AS f FROM w.ranking ${where} ORDER BY 1, 2`, {
        duckdb: db(name),
      });
    // The run's clock is the service's (its Date header): fetch times and refresh_after both read it, so moving the
    // emulator's clock plays the nights. This machine's clock is left alone.
    await clock(NIGHT_1);
    let before = await counters();
    await run('nightly_serp', body('nightly_serp', ['coffee', 'tea']));
    const night1 = await rows('nightly_serp');
    // Fetched on the emulated night, not on this machine's date.
    for (const r of night1)
      expect(Date.parse(`${r.f as string}Z`) - NIGHT_1).toSatisfy((d: number) => d >= 0 && d < HOUR);
    const perQuery = (await counters()).requests - before.requests;
    expect(perQuery).toBeGreaterThan(0);

    // Night 2: a query is added; the two fetched yesterday are not due.
    await clock(NIGHT_1 + DAY);
    before = await counters();
    await run('nightly_serp', body('nightly_serp', ['coffee', 'tea', 'juice']));
    const requests = (await counters()).requests - before.requests;
    const full = `full_${++fullLoads}`;
    before = await counters();
    await run(full, body(full, ['juice']));
    expect(requests).toBe((await counters()).requests - before.requests);
    expect(await rows('nightly_serp', "WHERE query <> 'juice'")).toEqual(night1);
    // The same results; fetched a few emulated seconds apart (the emulator's clock runs while the nights play).
    const ranked = (list: Obj[]): Obj[] => list.map(({ f: _f, ...r }) => r);
    expect(ranked(await rows('nightly_serp', "WHERE query = 'juice'"))).toEqual(ranked(await rows(full)));

    // Eight days after night 2 every query is due again; the merge key keeps one row per position: the latest ranking.
    await clock(NIGHT_1 + 9 * DAY);
    before = await counters();
    await run('nightly_serp', body('nightly_serp', ['coffee', 'tea', 'juice']));
    expect((await counters()).requests - before.requests).toBeGreaterThan(requests);
    const latest = await rows('nightly_serp');
    for (const r of latest)
      expect(Date.parse(`${r.f as string}Z`) - (NIGHT_1 + 9 * DAY)).toSatisfy((d: number) => d >= 0 && d < HOUR);
    expect(new Set(latest.map((r) => `${r.query as string}|${r.position as number}`)).size).toBe(latest.length);
    const perNight = (await counters()).requests - before.requests;

    // A backfill refetches now every query fetched before --from (here: all), though refresh_after would skip them;
    // the refetch is the fresh copy refresh_after counts from: the next night fetches nothing.
    const from = new Date(NIGHT_1 + 10 * DAY).toISOString().slice(0, 10);
    await clock(NIGHT_1 + 10 * DAY);
    before = await counters();
    await run('nightly_serp', body('nightly_serp', ['coffee', 'tea', 'juice']), ['--from', from]);
    expect((await counters()).requests - before.requests).toBe(perNight);
    for (const r of await rows('nightly_serp'))
      expect(Date.parse(`${r.f as string}Z`)).toBeGreaterThanOrEqual(NIGHT_1 + 10 * DAY);
    await clock(NIGHT_1 + 11 * DAY);
    before = await counters();
    await run('nightly_serp', body('nightly_serp', ['coffee', 'tea', 'juice']));
    expect((await counters()).requests).toBe(before.requests);
    const history = memoryIo({ SLUICE_API_KEY: KEY });
    expect(await runCli(['runs', path.join(dir, 'nightly_serp.yaml')], history)).toBe(0);
    expect(history.stdout.join('\n')).toContain(`backfill: fetched_at > "${from}T00:00:00.000Z"`);
  });

  it('a review backfill reloads the window, each review once, and leaves the next night as it was', async () => {
    const reviews = (name: string): string[] => [
      `source: { type: reviews, zone: serp_zone, fids: [${FIDS.map((f) => `"${f}"`).join(', ')}], max_pages: 30,` +
        ' sort: newestFirst, incremental: true }',
      'transforms: [{ type: normalize, preset: reviews }]',
      `sink: { type: duckdb, path: ${name}.duckdb, table: reviews, write: merge, primary_key: [review_id] }`,
    ];
    const ids = (name: string): Promise<string[]> =>
      query('SELECT review_id FROM w.reviews ORDER BY review_id', { duckdb: db(name) }).then((r) =>
        r.map((x) => x.review_id as string),
      );
    const requested = async (name: string, args: string[] = []): Promise<{ requests: number; log: string }> => {
      const before = (await counters()).requests;
      const log = await run(name, reviews(name), args);
      return { requests: (await counters()).requests - before, log };
    };
    const day = (at: number): string => new Date(at).toISOString().slice(0, 10);
    const T1 = NIGHT_1 + 14 * DAY;
    const T2 = T1 + 11 * DAY;
    await clock(T1);
    await requested('filled');
    const shownT1 = FIDS.flatMap((fid) => reviewIdsAt(1, fid, T1)).sort();
    const pagesT1 = FIDS.reduce(
      (n, fid) => n + reviewPagesUntilKnown(1, fid, reviewIdsAt(1, fid, T1).length, Infinity),
      0,
    );

    // The reviews of the last 60 days again, every place read from its first page, past what the night loaded.
    let bf = await requested('filled', ['--from', day(T1 - 60 * DAY)]);
    expect(bf.requests).toBeGreaterThan(FIDS.length);
    expect(bf.requests).toBeLessThan(pagesT1);
    expect(bf.log).toContain(`reviews: ${bf.requests} billed page request(s)`);
    // Merged on review_id: each review once.
    expect(await ids('filled')).toEqual(shownT1);

    // A window that starts after what the night loaded: reviews posted between the two are not in it.
    await clock(T1 + 10 * DAY);
    bf = await requested('filled', ['--from', day(T1 + 5 * DAY)]);
    expect(bf.requests).toBeGreaterThanOrEqual(FIDS.length);

    // The next night requests the pages it would have without the backfills — per place, those holding the reviews
    // posted since the night before, up to the first page showing one loaded then — and loads the reviews between.
    await clock(T2);
    const next = await requested('filled');
    const expected = FIDS.reduce((n, fid) => {
      const fresh = reviewIdsAt(1, fid, T2).length - reviewIdsAt(1, fid, T1).length;
      return n + reviewPagesUntilKnown(1, fid, reviewIdsAt(1, fid, T2).length, fresh);
    }, 0);
    expect(next.requests).toBe(expected);
    expect(await ids('filled')).toEqual(FIDS.flatMap((fid) => reviewIdsAt(1, fid, T2)).sort());

    const history = memoryIo({ SLUICE_API_KEY: KEY });
    expect(await runCli(['runs', path.join(dir, 'filled.yaml')], history)).toBe(0);
    expect(history.stdout.join('\n')).toContain(`backfill: date > "${day(T1 - 60 * DAY)}T00:00:00.000Z"`);
  });
});
