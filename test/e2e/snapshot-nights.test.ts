/**
 * An incremental snapshot pipeline over emulated nights, against the emulator's default behaviour (the live
 * service's), with its clock moved night by night (`POST /_emulator/clock`) and the CLI run in-process:
 * - most nights bring new records the filter matches: one filter job, charged for exactly the records it loads;
 * - on quiet nights no new record matches: the service says so up front (422), and the run exits 0 having started
 *   no job and paid nothing, its cursor where it was;
 * - then a night's run fails after its filter job started (the service's parts endpoint is down: the emulator,
 *   which keeps its state and the account's counters in a state file, restarted with a fault), and nobody runs the
 *   pipeline again for 31 days. Its saved snapshot has expired (400 "Snapshot is expired"), and `resume:
 *   { on_missing_job: restart }` starts a new run that pays for one new job and loads everything since the last
 *   record loaded.
 * After every successful night the table equals a full load of the data as it stands; the emulator's counters say
 * what each night paid for; `plan` then shows the filter from the committed cursor. The figures are printed.
 *
 * Between the regular nights and the failing one, a backfill of a past window (`sluice run --from … --to …`): one
 * filter job charged for the window's records alone, merged into the table (every record once), recorded in the
 * history as a backfill; the failing night then filters from the cursor as it was before the backfill and pays for
 * the records new since alone. Then the backfills the CLI refuses (exit 2, nothing paid).
 *
 * `npm test` plays three nights (a load, a quiet night, a load) before the failing one; SLUICE_SNAPSHOT_NIGHTS=full
 * (CI, `.ci/run`) plays thirty.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/cli.js';
import type { EmulatorOptions } from '../../src/emulator/context.js';
import { COMPANY_PROFILES_ID, findDataset } from '../../src/emulator/data/datasets-catalogue.js';
import { growingDataset, sizeAt } from '../../src/emulator/datasets/growth.js';
import { startEmulator, type EmulatorHandle } from '../../src/emulator/server.js';
import { readRunHistory, type RunRecord } from '../../src/state/run-history.js';
import { memoryIo } from '../cli/memory-io.js';
import { emulatorBill, moveClock, query, type EmulatorBill } from './harness.js';

const FULL = process.env.SLUICE_SNAPSHOT_NIGHTS === 'full';
const REGULAR_NIGHTS = FULL ? 30 : 3;
const KEY = 'emulator-key';
const DAY = 86_400_000;
/** Half past an hour: new records appear on whole hours, so none appears while a night's run goes on. */
const NIGHT_1 = Date.parse('2025-03-01T02:30:00Z');
/** About two new records a day, of which the filter matches one in three or so: some nights are quiet. */
const SIZE = 150;
const FOLLOWERS = 30_000;
/** Emulated time runs 10× faster (filter jobs are quick), slowly enough that a night stays inside its hour. */
const OPTIONS: Partial<EmulatorOptions> = { apiKey: KEY, size: SIZE, timeScale: 10, jobSchedulingMs: 200 };

let dir: string;
let stateFile: string;
let emu: EmulatorHandle;
beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'sluice-snapshot-nights-'));
  stateFile = path.join(dir, 'emulator.json');
  emu = await startEmulator({ ...OPTIONS, stateFile, now: NIGHT_1 });
});
afterAll(async () => {
  await emu?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The same service after a restart (its state, clock and counters from the state file), optionally with faults. */
async function restartEmulator(faults?: EmulatorOptions['faults']): Promise<void> {
  await emu.close();
  emu = await startEmulator({ ...OPTIONS, stateFile, ...(faults !== undefined && { faults }) });
}

const setClock = (at: number): Promise<void> => moveClock(emu, at);
const counters = (): Promise<EmulatorBill> => emulatorBill(emu);

const db = (): string => path.join(dir, 'nightly.duckdb');

/** A past window for the backfill, inside the original records (collected 6 January to 5 February 2025). */
const FROM = '2025-01-15T00:00:00Z';
const TO = '2025-01-25T00:00:00Z';

/** Writes the pipeline (pointed at the emulator as it is now) and runs it in-process. */
async function run(...extra: string[]): Promise<{ code: number; log: string }> {
  const file = pipeline();
  const io = memoryIo({ SLUICE_API_KEY: KEY });
  const code = await runCli(['run', file, '--no-progress', ...extra], io);
  return { code, log: io.stderr.join('\n') };
}

/** The pipeline file, `nightly` unless a variant's name, sink options and incremental line are given. */
function pipeline(
  name = 'nightly',
  sink = 'write: merge, primary_key: [id]',
  incremental = 'incremental: { cursor: timestamp, initial: "2025-01-01T00:00:00Z" }',
): string {
  const file = path.join(dir, `${name}.yaml`);
  writeFileSync(
    file,
    `version: 1
name: ${name === 'nightly' ? 'nightly_companies' : name}
service:
  base_url: ${emu.url}
  api_key: \${SLUICE_API_KEY}
  retry: { retries: 1, base_delay_ms: 10, max_delay_ms: 20 }
source:
  type: snapshot
  dataset_id: ${COMPANY_PROFILES_ID}
  filter: { name: followers, operator: '>=', value: ${FOLLOWERS} }
  ${incremental}
  records_limit: 10000
  download: { batch_size: 1000 }
  poll: { interval_ms: 20 }
resume: { on_missing_job: restart }
sink: { type: duckdb, path: ${name}.duckdb, table: companies, ${sink} }
`,
  );
  return file;
}

const companies = growingDataset(findDataset(COMPANY_PROFILES_ID)!, SIZE);
const matches = (i: number): boolean => Number(companies.record(1, i).followers) >= FOLLOWERS;

/** A full load at `at`: every record that exists then and matches, by id and collection time. */
function fullLoad(at: number): [string, number][] {
  const out: [string, number][] = [];
  for (let i = 0; i < sizeAt(1, SIZE, at, true); i++)
    if (matches(i)) {
      const r = companies.record(1, i);
      out.push([r.id as string, Date.parse(r.timestamp as string)]);
    }
  return out.sort((a, b) => (a[0] < b[0] ? -1 : 1));
}

async function table(): Promise<[string, number][]> {
  const rows = await query(
    `SELECT id, strftime(timestamp::TIMESTAMP, '%Y-%m-%dT%H:%M:%S.%gZ') AS ts FROM w.companies ORDER BY id`,
    { duckdb: db() },
  ).catch(() => []);
  return rows.map((r) => [r.id as string, Date.parse(r.ts as string)]);
}

/** Records the filter matches that appeared after `from` and by `to` (emulated times). */
function newMatches(from: number | undefined, to: number): number {
  const first = from === undefined ? 0 : sizeAt(1, SIZE, from, true);
  let n = 0;
  for (let i = first; i < sizeAt(1, SIZE, to, true); i++) if (matches(i)) n++;
  return n;
}

interface Night {
  night: string;
  exit: number;
  filter_jobs: number;
  records_charged: number;
  committed: number;
}
const played: Night[] = [];
/** Rows in the table after the last night played. */
let loadedSoFar = 0;

/** The nightly pipeline's run history: every attempt's last line, by `run#attempt`. */
async function history(): Promise<Map<string, RunRecord>> {
  const records = await readRunHistory(path.join(dir, '.sluice/nightly_companies/runs.jsonl'));
  return new Map(records.map((r) => [`${r.run}#${r.attempt}`, r]));
}

/** Plays the night `day` days after the first: the clock set, one run, what it paid and loaded. */
async function night(day: number): Promise<{ n: Night; log: string }> {
  const at = NIGHT_1 + day * DAY;
  await setClock(at);
  const before = await counters();
  const attempts = await history();
  const { code, log } = await run();
  const after = await counters();
  const rows = await table();
  // The run history records what the service charged, attempt by attempt (what `sluice report` charts).
  const recorded = [...(await history()).values()].filter((r) => !attempts.has(`${r.run}#${r.attempt}`));
  expect(recorded.reduce((sum, r) => sum + r.recordsCharged!, 0)).toBe(after.records_charged - before.records_charged);
  const n: Night = {
    night: new Date(at).toISOString().slice(0, 10),
    exit: code,
    filter_jobs: (after.paid.filter ?? 0) - (before.paid.filter ?? 0),
    records_charged: after.records_charged - before.records_charged,
    committed: rows.length - loadedSoFar,
  };
  loadedSoFar = rows.length;
  played.push(n);
  if (code === 0) expect(rows, `night ${n.night}`).toEqual(fullLoad(at));
  return { n, log };
}

describe('an incremental snapshot over emulated nights, against the live behaviour', () => {
  it(
    'quiet nights exit 0 and pay nothing; a job expired 31 days later is restarted; nothing else is paid twice',
    { timeout: FULL ? 600_000 : 180_000 },
    async () => {
      let lastNight: number | undefined;
      let quiet = 0;
      for (let day = 0; day < REGULAR_NIGHTS; day++) {
        const at = NIGHT_1 + day * DAY;
        const fresh = newMatches(lastNight, at);
        const { n, log } = await night(day);
        expect(n.exit, log).toBe(0);
        lastNight = at;
        if (fresh === 0) {
          quiet++;
          // Known up front (422): no job started, nothing charged, nothing loaded, the cursor where it was.
          expect(n, log).toMatchObject({ filter_jobs: 0, records_charged: 0, committed: 0 });
          expect(log).toMatch(
            /the service answered 422 "Provided filter did not match any records": no new records, nothing to load; the cursor on timestamp stays where it was/,
          );
        } else expect(n, log).toMatchObject({ filter_jobs: 1, records_charged: fresh, committed: fresh });
      }
      expect(quiet).toBeGreaterThan(0);
      expect(played.filter((p) => p.committed > 0).length).toBeGreaterThan(1);

      // A backfill of a past window, the same night: it pays for the window's records alone and merges them.
      const inWindow = (ts: number): boolean => ts > Date.parse(FROM) && ts <= Date.parse(TO);
      const window = fullLoad(lastNight!).filter(([, ts]) => inWindow(ts)).length;
      expect(window).toBeGreaterThan(0);
      const beforeBackfill = await counters();
      const backfill = await run('--from', FROM, '--to', TO);
      expect(backfill.code, backfill.log).toBe(0);
      expect(backfill.log).toContain(
        'backfill: timestamp > "2025-01-15T00:00:00.000Z" and ≤ "2025-01-25T00:00:00.000Z"; the nightly cursor stays where it is',
      );
      const afterBackfill = await counters();
      expect(afterBackfill.records_charged - beforeBackfill.records_charged).toBe(window);
      expect((afterBackfill.paid.filter ?? 0) - (beforeBackfill.paid.filter ?? 0)).toBe(1);
      expect(await table()).toEqual(fullLoad(lastNight!));
      const history = new Array<string>();
      for (const args of [['--json', '--limit', '1'], []]) {
        const io = memoryIo({ SLUICE_API_KEY: KEY });
        expect(await runCli(['runs', pipeline(), ...args], io), io.stderr.join('\n')).toBe(0);
        history.push(io.stdout.join('\n'));
      }
      expect(JSON.parse(history[0]!)).toMatchObject({
        status: 'succeeded',
        kind: 'backfill',
        window: { of: 'timestamp', from: '2025-01-15T00:00:00.000Z', to: '2025-01-25T00:00:00.000Z' },
        records: window,
      });
      expect(history[1]).toContain('backfill: timestamp > "2025-01-15T00:00:00.000Z" and ≤ "2025-01-25T00:00:00.000Z"');
      const cursor = Math.max(...fullLoad(lastNight!).map(([, ts]) => ts));

      // The next night with new records: its filter job is started and checkpointed, then the service's parts
      // endpoint fails (503) until the run gives up. The job was built, and charged.
      let failDay = REGULAR_NIGHTS;
      while (newMatches(lastNight, NIGHT_1 + failDay * DAY) === 0) failDay++;
      const expiredRecords = newMatches(lastNight, NIGHT_1 + failDay * DAY);
      await restartEmulator({ rules: [{ route: 'GET /datasets/snapshots/*/parts', rate: 1, faults: { '503': 1 } }] });
      const failed = await night(failDay);
      // From the cursor as it was before the backfill: it pays for the records new since the last night alone.
      expect(failed.log).toContain(
        `incremental: timestamp > "${new Date(cursor).toISOString()}", the last value loaded`,
      );
      expect(failed.n.exit, failed.log).toBe(1);
      expect(failed.log).toMatch(/parts: 503/);
      expect(failed.n).toMatchObject({ filter_jobs: 1, records_charged: expiredRecords, committed: 0 });

      // Nobody runs it again for 31 days: the snapshot expired 30 days after its job finished. The rerun resumes
      // the unfinished run, finds its snapshot expired, and restarts: one new job, from the last record loaded.
      await restartEmulator();
      const resumeDay = failDay + 31;
      const since = newMatches(lastNight, NIGHT_1 + resumeDay * DAY);
      const resumed = await night(resumeDay);
      expect(resumed.n.exit, resumed.log).toBe(0);
      expect(resumed.log).toMatch(/resuming nightly_companies \(run /);
      expect(resumed.log).toMatch(
        /snapshot snap_\w+ has expired \(started .* by run \S+\): GET \/datasets\/snapshots\/snap_\w+\/parts: 400: Snapshot is expired; resume\.on_missing_job is restart: this new run \(\S+\) starts a new paid filter job \(records_limit 10000\)/,
      );
      // The expired job's records are bought again (their data is gone): nothing else is paid twice.
      expect(resumed.n).toMatchObject({ filter_jobs: 1, records_charged: since, committed: since });
      expect(since).toBeGreaterThanOrEqual(expiredRecords);

      const paid = played.reduce((s, p) => s + p.records_charged, 0);
      const loaded = played.reduce((s, p) => s + p.committed, 0);
      expect(paid - loaded).toBe(expiredRecords);
      expect(loaded).toBe(fullLoad(NIGHT_1 + resumeDay * DAY).length);

      // `plan` shows the filter the next run would send, from the cursor the sink committed (the newest record
      // loaded), and starts nothing.
      const before = await counters();
      const io = memoryIo({ SLUICE_API_KEY: KEY });
      expect(await runCli(['plan', path.join(dir, 'nightly.yaml')], io)).toBe(0);
      const shown = /"name":"timestamp","operator":">","value":"([^"]+)"/.exec(io.stdout.join('\n'))?.[1];
      expect(shown, io.stdout.join('\n')).toBeDefined();
      expect(Date.parse(shown!)).toBe(Math.max(...(await table()).map(([, ts]) => ts)));
      expect((await counters()).paid).toEqual(before.paid);

      console.log(
        [
          `backfill ${FROM} – ${TO}: 1 filter job, ${window} records charged`,
          '| night | exit | filter jobs | records charged | committed |',
          '|---|---:|---:|---:|---:|',
          ...played.map((p) => `| ${p.night} | ${p.exit} | ${p.filter_jobs} | ${p.records_charged} | ${p.committed} |`),
        ].join('\n'),
      );
    },
  );

  it('refuses a backfill (exit 2, nothing paid) into an appending or replacing sink, of a source without a cursor, of a crawl without one, with --to alone, of a bad value', async () => {
    const serp = path.join(dir, 'serp.yaml');
    writeFileSync(
      serp,
      `version: 1
name: serp
service:
  base_url: ${emu.url}
  api_key: \${SLUICE_API_KEY}
source: { type: serp, zone: serp_zone, queries: [coffee] }
sink: { type: duckdb, path: serp.duckdb, table: serp, write: merge, primary_key: [query] }
`,
    );
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
      [['run', serp, '--from', FROM], /this SERP crawl has no `refresh_after`: every run fetches every query already/],
      [['run', pipeline(), '--to', TO], /--to needs --from/],
      [
        ['run', pipeline(), '--from', 'last tuesday'],
        /--from "last tuesday": not an ISO 8601 date .*, and the cursor timestamp holds dates and times/,
      ],
      // Off the calendar: once read as 2 March and paid for as such.
      [['run', pipeline(), '--from', '2025-02-30'], /--from "2025-02-30": 2025-02-30 is not a day of the calendar/],
      [['run', pipeline(), '--from', TO, '--to', FROM], /--to "2025-01-15T00:00:00.000Z" is not after --from/],
      [['run', pipeline(), '--from', FROM, '--reset-cursor'], /--from does not go with --reset-cursor/],
    ];
    for (const [args, message] of cases) {
      const io = memoryIo({ SLUICE_API_KEY: KEY });
      expect(await runCli(args, io)).toBe(2);
      expect(io.stderr.join('\n')).toMatch(message);
    }
    expect(await counters()).toEqual(before);
  });
});
