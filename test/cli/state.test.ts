/**
 * `sluice state` and its changes by hand, in-process against real runs: an incremental snapshot into DuckDB through
 * the emulator (where the next run's filter starts, and what it is charged for), local JSONL and Parquet outputs
 * (Postgres: test/sinks/postgres/sink.test.ts), the run history's entries, and the refusals (a run holding the lock,
 * a wrong value, no confirmation, no cursor).
 */
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/cli.js';
import { COMPANY_PROFILES_ID } from '../../src/emulator/data/datasets-catalogue.js';
import { startEmulator, type EmulatorHandle } from '../../src/emulator/server.js';
import { createLogger } from '../../src/runtime/logger.js';
import { acquireRunLock } from '../../src/state/run-lock.js';
import { query } from '../e2e/harness.js';
import { memoryIo } from './memory-io.js';

const KEY = 'emulator-key';
let emu: EmulatorHandle;
const dirs: string[] = [];
beforeAll(async () => {
  emu = await startEmulator({ apiKey: KEY, size: 60, timeScale: 50, jobSchedulingMs: 50 });
});
afterAll(async () => {
  await emu?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const d = mkdtempSync(path.join(tmpdir(), 'sluice-state-'));
  dirs.push(d);
  return d;
}

async function cli(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  // No API key: reading and changing state never calls the service.
  const io = memoryIo({});
  const code = await runCli(args, io);
  return { code, out: io.stdout.join('\n'), err: io.stderr.join('\n') };
}

const charged = async (): Promise<number> =>
  ((await (await fetch(`${emu.url}/_emulator/counters`)).json()) as { records_charged: number }).records_charged;

describe('sluice state: an incremental snapshot into DuckDB', () => {
  it('shows the cursor first; set moves where the next run starts; reset and drop start over; all in the history', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'p.yaml');
    writeFileSync(
      file,
      `version: 1
name: state_snap
service:
  base_url: ${emu.url}
  api_key: \${SLUICE_API_KEY}
source:
  type: snapshot
  dataset_id: ${COMPANY_PROFILES_ID}
  incremental: { cursor: timestamp, initial: "2000-01-01T00:00:00Z" }
  records_limit: 10000
  poll: { interval_ms: 20 }
sink: { type: duckdb, path: out.duckdb, table: companies, write: merge, primary_key: [id] }
`,
    );
    const db = path.join(dir, 'out.duckdb');
    const run = async (): Promise<{ records: number; log: string }> => {
      const before = await charged();
      const io = memoryIo({ SLUICE_API_KEY: KEY });
      expect(await runCli(['run', file, '--no-progress'], io), io.stderr.join('\n')).toBe(0);
      return { records: (await charged()) - before, log: io.stderr.join('\n') };
    };
    const first = await run();
    // The initial value as the cursor holds every time (sources/cursor-value.ts): UTC, to the millisecond.
    expect(first.log).toContain('incremental: timestamp > the initial value "2000-01-01T00:00:00.000Z"');
    const loaded = await query(
      `SELECT strftime(max(timestamp::TIMESTAMP), '%Y-%m-%dT%H:%M:%S.%gZ') AS max, count(*)::INT AS n FROM w.companies`,
      { duckdb: db },
    );
    expect(first.records).toBe(loaded[0]!.n);

    // The cursor first, per source and per sink; no unit unless asked.
    const shown = await cli('state', file);
    expect(shown.code, shown.err).toBe(0);
    const max = (JSON.parse((await cli('state', file, '--json')).out) as { cursor: string }).cursor;
    expect(Date.parse(max)).toBe(Date.parse(loaded[0]!.max as string));
    expect(shown.out).toContain(`next run starts after: timestamp > ${JSON.stringify(max)}  (committed by every sink)`);
    expect(shown.out).toMatch(
      new RegExp(`^ {2}1: duckdb .*out\\.duckdb table companies: timestamp "${max}", 1 unit`, 'm'),
    );
    expect(shown.out).not.toContain('part:1');
    expect((await cli('state', file, '--units')).out).toMatch(/^ {2}\d{17}-[0-9a-f]{6} {2}snapshot:.*:part:1$/m);

    // Set back to a value below the records' middle: the next run's filter starts there, and pays only for the rest.
    const middle = await query(
      `SELECT strftime(quantile_disc(timestamp::TIMESTAMP, 0.5), '%Y-%m-%dT%H:%M:%S.%gZ') AS t FROM w.companies`,
      { duckdb: db },
    );
    const setTo = middle[0]!.t as string;
    const after = (
      await query(`SELECT count(*)::INT AS n FROM w.companies WHERE timestamp::TIMESTAMP > '${setTo}'::TIMESTAMP`, {
        duckdb: db,
      })
    )[0]!.n as number;
    expect(after).toBeGreaterThan(0);
    expect(after).toBeLessThan(loaded[0]!.n as number);
    // Typed with an offset: stored, shown and sent in the filter as the one UTC text the cursor holds.
    const typed = new Date(Date.parse(setTo) + 2 * 3600_000).toISOString().replace('Z', '+02:00');
    const set = await cli('state', 'set', file, '--cursor', typed);
    expect(set.code, set.err).toBe(0);
    expect(set.out).toContain(`state-set: cursor on timestamp set to "${setTo}" (was "${max}")`);
    expect((await cli('state', file)).out).toContain(`next run starts after: timestamp > "${setTo}"`);
    const second = await run();
    expect(second.log).toContain(`incremental: timestamp > "${setTo}", the last value loaded`);
    expect(second.records).toBe(after);
    // That run committed past the value set: the cursor goes on from what it loaded.
    expect((await cli('state', file)).out).toContain(`next run starts after: timestamp > ${JSON.stringify(max)}`);

    // Values the cursor's type refuses: not a date, one the runs would not take, one off the calendar (Date.parse
    // reads it as March 2nd), a time without an offset (the machine's zone) or with a zone's name: nothing stored.
    for (const bad of ['yesterday', '9999-12-31T00:00:00Z', '2025-02-30', '2025-01-01 12:00 PST', '2025-01-01T12:00']) {
      const r = await cli('state', 'set', file, '--cursor', bad);
      expect(r.code, bad).toBe(2);
      expect(r.err).toContain(`--cursor "${bad}"`);
    }
    expect((await cli('state', 'set', file, '--cursor', '2025-02-30')).err).toContain(
      '--cursor "2025-02-30": 2025-02-30 is not a day of the calendar, and the cursor timestamp holds dates and times',
    );
    expect((await cli('state', 'set', file, '--cursor', '2025-01-01 12:00 PST')).err).toMatch(
      /not an ISO 8601 date \(YYYY-MM-DD\) or time with its offset/,
    );
    expect((await cli('state', file)).out).toContain(`next run starts after: timestamp > ${JSON.stringify(max)}`);

    // Reset: needs --yes; then the next run starts from the initial value (merge: the table stays as it was).
    const unconfirmed = await cli('state', 'reset', file);
    expect(unconfirmed.code).toBe(2);
    expect(unconfirmed.err).toMatch(/would forget the checkpoints every sink committed.*not done without --yes/);
    expect((await cli('state', file)).out).toContain(`timestamp > ${JSON.stringify(max)}`);
    expect((await cli('state', 'reset', file, '--yes')).code).toBe(0);
    expect((await cli('state', file)).out).toContain('timestamp > the initial value "2000-01-01T00:00:00.000Z"');

    // A run holding the lock: every change refuses with exit 3, naming the holder, and changes nothing.
    const lock = await acquireRunLock(path.join(dir, '.sluice', 'state_snap', 'run.lock'), {
      command: 'sluice run p.yaml',
      log: createLogger({ format: 'text', level: 'error', write: () => undefined }),
    });
    try {
      for (const args of [
        ['state', file],
        ['state', 'set', file, '--cursor', setTo],
        ['state', 'reset', file, '--yes'],
        ['state', 'drop', file, '--sink', 'duckdb', '--yes'],
      ]) {
        const r = await cli(...args);
        expect(r.code, args.join(' ')).toBe(3);
        expect(r.err).toContain('(sluice run p.yaml)');
      }
    } finally {
      await lock.release();
    }

    // Drop: the table and its checkpoints go together.
    expect((await cli('state', 'drop', file, '--sink', '1')).code).toBe(2);
    const dropped = await cli('state', 'drop', file, '--sink', 'duckdb', '--yes');
    expect(dropped.code, dropped.err).toBe(0);
    expect(dropped.out).toContain('state-drop: dropped table main.companies and its rows in main._sluice_state');
    expect(
      await query(
        `SELECT (SELECT count(*) FROM duckdb_tables() WHERE database_name = 'w' AND table_name = 'companies')::INT AS tables, ` +
          `(SELECT count(*) FROM w._sluice_state)::INT AS states`,
        { duckdb: db },
      ),
    ).toEqual([{ tables: 0, states: 0 }]);

    // Each change is in the history, among the runs, newest first.
    const history = await cli('runs', file, '--json');
    expect(history.code, history.err).toBe(0);
    const lines = history.out.split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.map((l) => l.kind ?? l.status)).toEqual([
      'state-drop',
      'state-reset',
      'succeeded',
      'state-set',
      'succeeded',
    ]);
    expect(lines[3]).toMatchObject({
      pipeline: 'state_snap',
      by: expect.stringMatching(/.@./),
      cursor: { field: 'timestamp', value: setTo, before: max },
    });
    expect(lines[0]).toMatchObject({ removed: ['table main.companies', 'its rows in main._sluice_state'] });
    const table = await cli('runs', file);
    expect(table.out).toMatch(/^state-set\s+\S+ \S+\s+-\s+done\b/m);
    expect(table.out).toMatch(/^ {4}cursor on timestamp set to .* \(by .+@.+\)$/m);
  }, 60_000);
});

describe('sluice state: values typed for a cursor, and options given empty', () => {
  it('a numeric cursor takes whole numbers a JSON number holds exactly, typed or configured', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'p.yaml');
    const pipeline = (initial: string): string =>
      `version: 1\nname: state_ids\nservice: { base_url: ${emu.url}, api_key: none }\n` +
      `source: { type: snapshot, dataset_id: ${COMPANY_PROFILES_ID}, incremental: { cursor: seq, initial: ${initial} }, records_limit: 10 }\n` +
      'sink: { type: duckdb, path: out.duckdb, table: t, write: merge, primary_key: [id] }\n';
    writeFileSync(file, pipeline('0'));
    // 2^53 + 1 reads as 2^53 in JS: stored, it would be a different cursor than typed.
    for (const bad of ['9007199254740993', '1.5', '1e3', 'ten']) {
      const r = await cli('state', 'set', file, '--cursor', bad);
      expect(r.code, bad).toBe(2);
      expect(r.err).toContain(`--cursor "${bad}"`);
    }
    expect((await cli('state', 'set', file, '--cursor', '9007199254740993')).err).toContain(
      '9007199254740993 is beyond the integers a JSON number holds exactly (±9007199254740991)',
    );
    const set = await cli('state', 'set', file, '--cursor', '9007199254740991');
    expect(set.code, set.err).toBe(0);
    expect(set.out).toContain('cursor on seq set to 9007199254740991 (was 0)');
    // The same rule for the configured initial value, at its line in the file.
    writeFileSync(file, pipeline('9007199254740993'));
    const refused = await cli('validate', file);
    expect(refused.code).toBe(2);
    // YAML reads the number rounded, as JSON.parse would: refused all the same.
    expect(refused.out).toMatch(
      /p\.yaml:4:\d+: source\.incremental\.initial: the initial cursor value: 9007199254740992 is beyond the integers/,
    );
  });

  it('an option given an empty value (an unset variable) is refused before anything is done', async () => {
    const dir = tempDir();
    writeFileSync(path.join(dir, 'in.jsonl'), '{"id":1}\n');
    const file = path.join(dir, 'p.yaml');
    writeFileSync(
      file,
      'version: 1\nname: state_empty\nsource: { type: file, paths: [in.jsonl], format: jsonl, incremental: false }\nsink: { type: jsonl, path: out }\n',
    );
    expect(await runCli(['run', file, '--no-progress', '--quiet'], memoryIo({}))).toBe(0);
    const files = readdirSync(path.join(dir, 'out')).filter((f) => !f.startsWith('.sluice'));
    expect(files).toHaveLength(2);
    // `--sink "$SINK"` with SINK unset once matched the only sink (every description holds ""), and dropped it.
    for (const args of [
      ['state', 'drop', file, '--sink', '', '--yes'],
      ['state', 'drop', file, '--sink=', '--yes'],
      ['state', 'set', file, '--cursor', ''],
    ]) {
      const r = await cli(...args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.err, args.join(' ')).toMatch(/^error: --(sink|cursor) is given an empty value/m);
      expect(r.err).toMatch(/an unset variable\?/);
    }
    expect(readdirSync(path.join(dir, 'out')).filter((f) => !f.startsWith('.sluice'))).toEqual(files);
  });
});

describe('sluice state: a file source into local JSONL and Parquet outputs', () => {
  it('drops an output’s files with its manifest; refuses a cursor value for a source whose cursor is its units', async () => {
    const dir = tempDir();
    writeFileSync(path.join(dir, 'in.jsonl'), '{"id":1,"a":"x"}\n{"id":2,"a":"y"}\n');
    const file = path.join(dir, 'p.yaml');
    writeFileSync(
      file,
      'version: 1\nname: state_files\nsource: { type: file, paths: [in.jsonl], format: jsonl, incremental: true }\n' +
        'sinks: [{ type: jsonl, path: out }, { type: parquet, path: pq, partition_by: [id] }]\n',
    );
    expect(await runCli(['run', file, '--no-progress', '--quiet'], memoryIo({}))).toBe(0);
    const out = path.join(dir, 'out');
    expect(readdirSync(out).filter((f) => !f.startsWith('.sluice'))).toHaveLength(2);
    expect((await cli('state', file)).out).toContain('next run skips: 1 unit(s) committed by every sink');

    const set = await cli('state', 'set', file, '--cursor', '5');
    expect(set.code).toBe(2);
    expect(set.err).toContain("the file source's cursor is the units it has loaded, not one value");

    // At a terminal, the question stands in for --yes: a no changes nothing, a yes drops.
    const asked: string[] = [];
    const atTerminal = (answer: boolean): ReturnType<typeof memoryIo> => ({
      ...memoryIo({}),
      confirm: async (q: string) => (asked.push(q), answer),
    });
    expect(await runCli(['state', 'drop', file, '--sink', 'jsonl'], atTerminal(false))).toBe(2);
    expect(readdirSync(out).filter((f) => !f.startsWith('.sluice'))).toHaveLength(2);
    const io = atTerminal(true);
    expect(await runCli(['state', 'drop', file, '--sink', 'jsonl'], io), io.stderr.join('\n')).toBe(0);
    expect(asked[0]).toMatch(
      /^sluice will remove jsonl .*out \(its table or files\) and its committed checkpoints\. Go on\?$/,
    );
    const dropped = { out: io.stdout.join('\n') };
    expect(dropped.out).toContain('state-drop: dropped 1 file(s) in');
    expect(readdirSync(out).filter((f) => !f.startsWith('.sluice'))).toEqual([]);
    expect(existsSync(path.join(out, '_sluice_manifest.json'))).toBe(false);
    expect((await cli('state', file)).out).toContain('next run skips: 0 unit(s)');
    // Parquet: the partition directories its files leave empty go too.
    const pq = path.join(dir, 'pq');
    expect(
      readdirSync(pq)
        .filter((f) => !f.startsWith('.sluice'))
        .sort(),
    ).toEqual(['_sluice_manifest.json', 'id=1', 'id=2']);
    const droppedPq = await cli('state', 'drop', file, '--sink', 'parquet', '--yes');
    expect(droppedPq.code, droppedPq.err).toBe(0);
    expect(droppedPq.out).toContain('state-drop: dropped 2 file(s) in');
    expect(readdirSync(pq).filter((f) => !f.startsWith('.sluice'))).toEqual([]);

    // Both drops in the history, newest first, with what they removed.
    const last = await cli('runs', file, '--json', '--limit', '2');
    expect(last.out.split('\n').map((l) => JSON.parse(l) as object)).toMatchObject([
      { kind: 'state-drop', sinks: [expect.stringMatching(/^parquet /)] },
      {
        kind: 'state-drop',
        removed: [expect.stringMatching(/^1 file\(s\) in /), 'its manifest _sluice_manifest.json'],
      },
    ]);
  });

  it('a source that keeps no cursor: state says so; set and reset refuse with exit 2', async () => {
    const dir = tempDir();
    writeFileSync(path.join(dir, 'in.jsonl'), '{"id":1}\n');
    const file = path.join(dir, 'p.yaml');
    writeFileSync(
      file,
      'version: 1\nname: state_plain\nsource: { type: file, paths: [in.jsonl], format: jsonl, incremental: false }\nsink: { type: jsonl, path: out }\n',
    );
    expect((await cli('state', file)).out).toContain('keeps no cursor');
    for (const args of [
      ['state', 'set', file, '--cursor', '1'],
      ['state', 'reset', file, '--yes'],
    ]) {
      const r = await cli(...args);
      expect(r.code).toBe(2);
      expect(r.err).toContain('keeps no cursor (not incremental)');
    }
  });
});
