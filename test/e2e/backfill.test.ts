/**
 * A backfill of an incremental snapshot (`sluice run --from … --to …`) over emulated nights, against the emulator's
 * default behaviour with its clock moved night by night and the CLI run in-process: two nightly runs, then a
 * backfill of a past window. The backfill pays for the window's records alone (one filter job, the emulator's
 * records_charged grows by exactly them), merges them into the same table (every record once), is recorded in the
 * run history as a backfill, and leaves the nightly cursor where it was: the next nightly run filters from the same
 * value as before the backfill and pays only for the records new since. Then the refusals (exit 2, nothing paid).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/cli.js';
import { COMPANY_PROFILES_ID, findDataset } from '../../src/emulator/data/datasets-catalogue.js';
import { growingDataset, sizeAt } from '../../src/emulator/datasets/growth.js';
import { startEmulator, type EmulatorHandle } from '../../src/emulator/server.js';
import { memoryIo } from '../cli/memory-io.js';
import { query } from './harness.js';

const KEY = 'emulator-key';
const DAY = 86_400_000;
/** Half past an hour: new records appear on whole hours, so none appears while a run goes on. */
const NIGHT_1 = Date.parse('2025-03-01T02:30:00Z');
const SIZE = 150;
const FOLLOWERS = 30_000;
/** A past window, inside the original records (collected 6 January to 5 February 2025). */
const FROM = '2025-01-15T00:00:00Z';
const TO = '2025-01-25T00:00:00Z';

let dir: string;
let emu: EmulatorHandle;
beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'sluice-backfill-'));
  emu = await startEmulator({ apiKey: KEY, size: SIZE, timeScale: 10, jobSchedulingMs: 200, now: NIGHT_1 });
});
afterAll(async () => {
  await emu?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function setClock(at: number): Promise<void> {
  const res = await fetch(`${emu.url}/_emulator/clock`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ now: new Date(at).toISOString() }),
  });
  expect(res.status).toBe(200);
}

interface Counters {
  paid: Record<string, number>;
  records_charged: number;
}
const counters = async (): Promise<Counters> =>
  (await (await fetch(`${emu.url}/_emulator/counters`)).json()) as Counters;

/** Writes the pipeline (`sink` replaces the merge sink) and returns its path. */
function pipeline(name: string, sink = 'write: merge, primary_key: [id]', source = ''): string {
  const file = path.join(dir, `${name}.yaml`);
  writeFileSync(
    file,
    `version: 1
name: ${name}
service:
  base_url: ${emu.url}
  api_key: \${SLUICE_API_KEY}
  retry: { retries: 1, base_delay_ms: 10, max_delay_ms: 20 }
source:
  type: snapshot
  dataset_id: ${COMPANY_PROFILES_ID}
  filter: { name: followers, operator: '>=', value: ${FOLLOWERS} }
  ${source || 'incremental: { cursor: timestamp, initial: "2025-01-01T00:00:00Z" }'}
  records_limit: 10000
  download: { batch_size: 1000 }
  poll: { interval_ms: 20 }
sink: { type: duckdb, path: ${name}.duckdb, table: companies, ${sink} }
`,
  );
  return file;
}

function serpPipeline(): string {
  const file = path.join(dir, 'serp.yaml');
  writeFileSync(
    file,
    `version: 1
name: serp
service:
  base_url: ${emu.url}
  api_key: \${SLUICE_API_KEY}
source: { type: serp, zone: serp_zone, queries: [coffee], refresh_after: 1d }
sink: { type: duckdb, path: serp.duckdb, table: serp, write: merge, primary_key: [query] }
`,
  );
  return file;
}

async function cli(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const io = memoryIo({ SLUICE_API_KEY: KEY });
  const code = await runCli(args, io);
  return { code, out: io.stdout.join('\n'), err: io.stderr.join('\n') };
}

/** One run: its exit, its log, and what the emulator charged for it. */
async function run(
  file: string,
  ...extra: string[]
): Promise<{ code: number; log: string; jobs: number; charged: number }> {
  const before = await counters();
  const { code, err } = await cli(['run', file, '--no-progress', ...extra]);
  const after = await counters();
  return {
    code,
    log: err,
    jobs: (after.paid.filter ?? 0) - (before.paid.filter ?? 0),
    charged: after.records_charged - before.records_charged,
  };
}

const companies = growingDataset(findDataset(COMPANY_PROFILES_ID)!, SIZE);
const matching = (at: number): { id: string; ts: number }[] => {
  const out = [];
  for (let i = 0; i < sizeAt(1, SIZE, at, true); i++) {
    const r = companies.record(1, i);
    if (Number(r.followers) >= FOLLOWERS) out.push({ id: r.id as string, ts: Date.parse(r.timestamp as string) });
  }
  return out;
};

async function table(name: string): Promise<[string, number][]> {
  const rows = await query(
    `SELECT id, strftime(timestamp::TIMESTAMP, '%Y-%m-%dT%H:%M:%S.%gZ') AS ts FROM w.companies ORDER BY id`,
    { duckdb: path.join(dir, `${name}.duckdb`) },
  );
  return rows.map((r) => [r.id as string, Date.parse(r.ts as string)]);
}
const fullLoad = (at: number): [string, number][] =>
  matching(at)
    .map((r): [string, number] => [r.id, r.ts])
    .sort((a, b) => (a[0] < b[0] ? -1 : 1));

/** The lower bound a nightly run filtered from, as it logged it. */
const cursorOf = (log: string): string | undefined => /incremental: timestamp > "([^"]+)"/.exec(log)?.[1];

describe('sluice run --from/--to: a backfill of an incremental snapshot', () => {
  it('pays for the window alone, merges it, is recorded as a backfill and leaves the nightly cursor', async () => {
    const file = pipeline('nightly');
    // Two nights with new records each, and a third after them.
    const newSince = (a: number, b: number): number => matching(b).filter((r) => r.ts > a).length;
    const days: number[] = [0];
    for (let d = 1; days.length < 3; d++)
      if (newSince(NIGHT_1 + days.at(-1)! * DAY, NIGHT_1 + d * DAY) > 0) days.push(d);
    const [night1, night2, night3] = days.map((d) => NIGHT_1 + d * DAY) as [number, number, number];

    expect((await run(file)).code).toBe(0);
    await setClock(night2);
    const second = await run(file);
    expect(second.code, second.log).toBe(0);
    expect(second.charged).toBe(newSince(night1, night2));
    const cursor = Math.max(...(await table('nightly')).map(([, ts]) => ts));

    // The backfill, the same night: one filter job for the window, charged for its records alone.
    const window = matching(night2).filter((r) => r.ts > Date.parse(FROM) && r.ts <= Date.parse(TO)).length;
    expect(window).toBeGreaterThan(0);
    const backfill = await run(file, '--from', FROM, '--to', TO);
    expect(backfill.code, backfill.log).toBe(0);
    expect(backfill.log).toContain(
      'backfill: timestamp > "2025-01-15T00:00:00.000Z" and ≤ "2025-01-25T00:00:00.000Z"; the nightly cursor stays where it is',
    );
    expect(backfill).toMatchObject({ jobs: 1, charged: window });
    // Merged: every record once, as a full load would hold them.
    expect(await table('nightly')).toEqual(fullLoad(night2));

    const runs = await cli(['runs', file, '--json']);
    const last = runs.out.split('\n').map((l) => JSON.parse(l) as Record<string, unknown>)[0]!;
    expect(last).toMatchObject({
      status: 'succeeded',
      kind: 'backfill',
      window: { of: 'timestamp', from: '2025-01-15T00:00:00.000Z', to: '2025-01-25T00:00:00.000Z' },
      records: window,
    });
    expect((await cli(['runs', file])).out).toContain(
      'backfill: timestamp > "2025-01-15T00:00:00.000Z" and ≤ "2025-01-25T00:00:00.000Z"',
    );

    // The next night filters from the cursor as it was before the backfill, and pays for what is new alone.
    await setClock(night3);
    const third = await run(file);
    expect(third.code, third.log).toBe(0);
    expect(Date.parse(cursorOf(third.log)!)).toBe(cursor);
    expect(third).toMatchObject({ jobs: 1, charged: newSince(night2, night3) });
    expect(await table('nightly')).toEqual(fullLoad(night3));
  });

  it('refuses (exit 2, nothing paid) an appending or replacing sink, a source without a cursor, a crawl, --to alone, a bad value', async () => {
    const before = await counters();
    const cases: [string[], RegExp][] = [
      [
        ['run', pipeline('append', 'write: append'), '--from', FROM],
        /the duckdb sink \(companies\) has `write: append`: the window's records it already holds would be appended a second time[\s\S]*--allow-duplicates/,
      ],
      [
        ['run', pipeline('replace', 'write: replace'), '--from', FROM],
        /`write: replace`: the backfill would replace everything it holds by the window's records alone/,
      ],
      [
        ['run', pipeline('whole', undefined, '# not incremental'), '--from', FROM],
        /this snapshot source is not incremental \(no `incremental: \{ cursor \}`\)/,
      ],
      [
        ['run', serpPipeline(), '--from', FROM],
        /a serp source cannot backfill a window; backfills are for snapshot sources[\s\S]*a SERP crawl with `refresh_after` fetches every query again now/,
      ],
      [['run', pipeline('nightly'), '--to', TO], /--to needs --from/],
      [
        ['run', pipeline('nightly'), '--from', 'last tuesday'],
        /--from "last tuesday" is not a date, and the cursor timestamp holds dates/,
      ],
      [['run', pipeline('nightly'), '--from', TO, '--to', FROM], /--to "2025-01-15T00:00:00.000Z" is not after --from/],
      [['run', pipeline('nightly'), '--from', FROM, '--reset-cursor'], /--from does not go with --reset-cursor/],
    ];
    for (const [args, message] of cases) {
      const r = await cli(args);
      expect(r.code, r.err).toBe(2);
      expect(r.err).toMatch(message);
    }
    expect((await counters()).records_charged).toBe(before.records_charged);
  });
});
