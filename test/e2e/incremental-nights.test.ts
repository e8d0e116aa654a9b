/**
 * SERP `refresh_after` over simulated nights, the CLI run in-process against one emulator. The runs' clock is set
 * night by night (see the test: the engine does not take "now" from the service yet). After every night the table
 * equals a full load of the same data (no row lost, none duplicated), and the emulator's counters show that the
 * night paid only for new data.
 *
 * The snapshot cursor and the incremental review crawl are in the nightly soak of the sink conformance suite
 * (test/sinks/conformance/soak.test.ts), into every sink.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { runCli } from '../../src/cli/cli.js';
import { startEmulator, type EmulatorHandle } from '../../src/emulator/server.js';
import { memoryIo } from '../cli/memory-io.js';
import { query, type Obj } from './harness.js';

const KEY = 'emulator-key';
const DAY = 86_400_000;
/** Half past an hour: records and reviews appear on whole hours, so none appears while a night's runs go on. */
const NIGHT_1 = Date.parse('2025-03-01T02:30:00Z');

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

interface Counters {
  paid: Record<string, number>;
  requests: number;
  records_charged: number;
}
const counters = async (): Promise<Counters> =>
  (await (await fetch(`${emu.url}/_emulator/counters`)).json()) as Counters;

/** Writes the pipeline and runs it in-process; returns its log lines (stderr). */
async function run(name: string, body: string[]): Promise<string> {
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
  const code = await runCli(['run', file, '--no-progress'], io);
  expect(code, io.stderr.join('\n')).toBe(0);
  return io.stderr.join('\n');
}

const db = (name: string): string => path.join(dir, `${name}.duckdb`);
let fullLoads = 0;

describe('incremental loads over simulated nights', () => {
  it('SERP with refresh_after: queries fetched within the period are not fetched again', async () => {
    const body = (name: string, queries: string[]): string[] => [
      `source: { type: serp, zone: serp_zone, queries: [${queries.map((q) => `"${q}"`).join(', ')}], max_pages: 2, refresh_after: 7d }`,
      'transforms: [{ type: normalize, preset: serp_organic }]',
      `sink: { type: duckdb, path: ${name}.duckdb, table: ranking, write: merge, primary_key: [query, position] }`,
    ];
    const rows = (name: string, where = ''): Promise<Obj[]> =>
      query(`SELECT query, position, link, CAST(fetched_at AS VARCHAR) AS f FROM w.ranking ${where} ORDER BY 1, 2`, {
        duckdb: db(name),
      });
    // The run's clock (SourceContext.now, which the fetch times and refresh_after both read) is still the machine's:
    // the engine does not yet take it from the service's Date header. Until it does, the runs' clock is set night
    // by night here; then `await clock(…)` alone will do.
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      vi.setSystemTime(NIGHT_1);
      let before = await counters();
      await run('nightly_serp', body('nightly_serp', ['coffee', 'tea']));
      const night1 = await rows('nightly_serp');
      const perQuery = (await counters()).requests - before.requests;
      expect(perQuery).toBeGreaterThan(0);

      // Night 2: a query is added; the two fetched yesterday are not due.
      vi.setSystemTime(NIGHT_1 + DAY);
      before = await counters();
      await run('nightly_serp', body('nightly_serp', ['coffee', 'tea', 'juice']));
      const requests = (await counters()).requests - before.requests;
      const full = `full_${++fullLoads}`;
      before = await counters();
      await run(full, body(full, ['juice']));
      expect(requests).toBe((await counters()).requests - before.requests);
      expect(await rows('nightly_serp', "WHERE query <> 'juice'")).toEqual(night1);
      expect(await rows('nightly_serp', "WHERE query = 'juice'")).toEqual(await rows(full));

      // Eight days later every query is due again; the merge key keeps one row per position: the latest ranking.
      vi.setSystemTime(NIGHT_1 + 8 * DAY);
      before = await counters();
      await run('nightly_serp', body('nightly_serp', ['coffee', 'tea', 'juice']));
      expect((await counters()).requests - before.requests).toBeGreaterThan(requests);
      const latest = await rows('nightly_serp');
      expect(latest.every((r) => Date.parse(`${r.f as string}Z`) >= NIGHT_1 + 8 * DAY)).toBe(true);
      expect(new Set(latest.map((r) => `${r.query as string}|${r.position as number}`)).size).toBe(latest.length);
    } finally {
      vi.useRealTimers();
    }
  });
});
