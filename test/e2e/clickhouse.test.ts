/**
 * The clickhouse sink end to end, against a throwaway server (test/support/clickhouse-server.ts):
 *
 * - kill -9 mid-load (mid-insert; then, in the rerun, between a unit's ATTACH and its state row), then a rerun: the
 *   table equals a clean load of the same files (count, distinct keys, a checksum over every value), and nothing is
 *   left beside it;
 * - the commands around a run, on ClickHouse: `--show`, checks after the load (read-only), `sluice state` (the units
 *   its `_sluice_state` holds) and `sluice state drop`, `_sluice_runs`, and the password in no output;
 * - the shipped example (pipelines/company_profiles_clickhouse.yaml) as written, two nights: `merge` keeps one row
 *   per company (read with FINAL).
 *
 * The server restarted at every point of a run: clickhouse-restart.test.ts. What every sink promises — kill -9 at
 * each failpoint of the commit path, checkpoints, cursors over nights, write modes, hostile records — the sink
 * conformance suite proves for ClickHouse with the others (test/sinks/conformance/).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { companyRecord, toJsonl } from '../../bench/lib/company-records.js';
import { runKilledAt } from '../../bench/lib/sluice-child.js';
import type { EmulatorHandle } from '../../src/emulator/server.js';
import { CH_PASSWORD, startClickHouse, type ClickHouseServer } from '../support/clickhouse-server.js';
import { digest } from '../support/compare-tables.js';
import { systemBinary } from '../support/system-packages.js';
import { emulator, sluice, sluiceInProcess, workspace, type Obj, type Workspace } from './harness.js';

const available = systemBinary('clickhouse') !== undefined;
const FILES = 6;
const PER_FILE = 1500;
const DB = 'e2e';

let server: ClickHouseServer;
let emu: EmulatorHandle;
beforeAll(async () => {
  if (!available) return;
  [server, emu] = await Promise.all([startClickHouse(), emulator({ seed: 3, size: 3000 })]);
  await server.createDatabase(DB);
}, 120_000);
afterAll(async () => {
  await emu?.close();
  server?.stop();
});

/** Company profiles as gzipped JSONL files, one unit each. */
function writeParts(ws: Workspace): void {
  const dir = path.join(ws.pipelines, 'parts');
  mkdirSync(dir, { recursive: true });
  for (let f = 0; f < FILES; f++) {
    const records = Array.from({ length: PER_FILE }, (_, i) => companyRecord(f * PER_FILE + i, 7));
    writeFileSync(path.join(dir, `part-${f}.jsonl.gz`), gzipSync(toJsonl(records)));
  }
}

function pipeline(ws: Workspace, name: string, table: string, extra = ''): string {
  return ws.write(
    `${name}.yaml`,
    `version: 1
name: ${name}
source: { type: file, paths: [parts], format: jsonl, concurrency: 2 }
transforms:
  - { type: normalize, preset: company_profile }
sink:
  type: clickhouse
  url: \${CLICKHOUSE_URL}
  database: ${DB}
  table: ${table}${extra}
`,
  );
}

async function tableRows(table: string): Promise<Obj[]> {
  return server.rows<Obj>(`SELECT * FROM ${DB}.${table}`);
}

describe.skipIf(!available)('clickhouse sink end to end', () => {
  it('kill -9 mid-insert, then between an ATTACH and its state row, then a rerun: the table equals a clean load', async () => {
    const ws = workspace();
    writeParts(ws);
    const env = { CLICKHOUSE_URL: server.url() };
    const clean = pipeline(ws, 'clean', 'clean');
    const r = await sluiceInProcess(['run', clean, '--no-progress'], { env });
    expect(r.code, r.stderr).toBe(0);

    const crashed = pipeline(ws, 'crashed', 'crashed');
    // Mid-insert of the first unit: ~3 MB of its text sent, nothing attached.
    const first = await runKilledAt(crashed, 'clickhouse:mid-insert=3000000', env);
    expect(first.died, `${first.endedAs}\n${first.stderr}`).toBe(true);
    expect(
      await server.rows(`SELECT count() AS n FROM system.tables WHERE database = '${DB}' AND name = 'crashed'`),
    ).toEqual([{ n: 0 }]);
    // The rerun dies between its second unit's ATTACH and that unit's state row: readers see whole units only.
    const second = await runKilledAt(crashed, 'clickhouse:after-attach=2', env);
    expect(second.died, `${second.endedAs}\n${second.stderr}`).toBe(true);
    const [seen] = await server.rows<{ n: number; ids: number }>(
      `SELECT count() AS n, uniqExact(company_id) AS ids FROM ${DB}.crashed`,
    );
    expect(seen!.n % PER_FILE).toBe(0);
    expect(seen!.ids).toBe(seen!.n);
    const done = await sluice(['run', crashed, '--no-progress'], { env });
    expect(done.code, done.stderr).toBe(0);
    for (const out of [first.stderr, second.stderr, done.stderr, done.stdout]) expect(out).not.toContain(CH_PASSWORD);

    const expected = digest(await tableRows('clean'), ['company_id']);
    expect(expected).toMatchObject({ rows: FILES * PER_FILE, keys: FILES * PER_FILE });
    expect(digest(await tableRows('crashed'), ['company_id'])).toEqual(expected);
    expect(
      await server.rows(`SELECT name FROM system.tables WHERE database = '${DB}' AND name LIKE 'crashed__sluice_%'`),
    ).toEqual([]);
  });

  it('--show, checks, `sluice state`, `sluice state drop` and `_sluice_runs` on a ClickHouse table', async () => {
    const ws = workspace();
    writeParts(ws);
    const env = { CLICKHOUSE_URL: server.url() };
    const file = pipeline(
      ws,
      'around',
      'around',
      `
  checks:
    - { type: row_count, min: ${FILES * PER_FILE} }
    - { type: unique, columns: [company_id] }
    - { type: not_null, columns: [company_id, name] }
    - { type: sql, name: no_negative, sql: "SELECT * FROM {table} WHERE followers < 0" }`,
    );
    const run = await sluiceInProcess(['run', file, '--no-progress', '--show', '2', '--log-format', 'json'], { env });
    expect(run.code, run.stderr).toBe(0);
    const summary = JSON.parse(run.stdout.split('\n')[0]!) as { checks: { name: string; passed: boolean }[] };
    expect(summary.checks.map((c) => [c.name, c.passed])).toEqual([
      ['row_count', true],
      ['unique(company_id)', true],
      ['not_null(company_id, name)', true],
      ['no_negative', true],
    ]);
    // --show reads the first rows back through its read-only client, the URL without the password.
    const lines = run.stdout.split('\n');
    const header = lines.findIndex((l) =>
      /^== clickhouse http:\/\/127\.0\.0\.1:\d+\/\S+ table \S+\.around: first 2 rows$/.test(l),
    );
    expect(header, run.stdout).toBeGreaterThan(0);
    const shown = lines.slice(header + 1, header + 3).map((l) => JSON.parse(l) as { company_id: string; name: string });
    expect(shown).toHaveLength(2);
    const ids = (await server.rows(`SELECT company_id FROM ${DB}.around`)).map(
      (r) => (r as { company_id: string }).company_id,
    );
    for (const row of shown) expect(ids).toContain(row.company_id);
    expect(run.stdout + run.stderr).not.toContain(CH_PASSWORD);
    expect(
      await server.rows(`SELECT status, units, records FROM ${DB}._sluice_runs WHERE pipeline = 'around'`),
    ).toEqual([{ status: 'complete', units: FILES, records: FILES * PER_FILE }]);

    // The units the sink committed, read back from its own `_sluice_state`.
    const state = await sluiceInProcess(['state', file], { env });
    expect(state.code, state.stderr).toBe(0);
    expect(state.stdout).toContain(`next run skips: ${FILES} unit(s) committed by every sink`);
    expect(state.stdout).toMatch(
      new RegExp(`1: clickhouse http://127\\.0\\.0\\.1:\\d+/${DB} table ${DB}\\.around: ${FILES} unit\\(s\\)`),
    );
    const dropped = await sluiceInProcess(['state', 'drop', file, '--sink', 'clickhouse', '--yes'], { env });
    expect(dropped.code, dropped.stderr).toBe(0);
    expect(dropped.stdout).toContain(`dropped table ${DB}.around and its rows in ${DB}._sluice_state`);
    expect(await server.rows(`SELECT name FROM system.tables WHERE database = '${DB}' AND name = 'around'`)).toEqual(
      [],
    );
    // The next run loads every file again, into a new table.
    const again = await sluiceInProcess(['run', file, '--no-progress'], { env });
    expect(again.code, again.stderr).toBe(0);
    expect(await server.rows(`SELECT count() AS n FROM ${DB}.around`)).toEqual([{ n: FILES * PER_FILE }]);
  });

  it('the shipped example runs as written, two nights: merge keeps one row per company', async () => {
    const ws = workspace();
    const env = { CLICKHOUSE_URL: server.url() };
    const file = ws.pipeline('company_profiles_clickhouse.yaml');
    const count = `SELECT count() AS n, uniqExact(company_id) AS ids FROM analytics.company_profiles FINAL`;
    const first = await sluiceInProcess(['run', file, '--no-progress'], { service: emu, env });
    expect(first.code, first.stderr).toBe(0);
    const [once] = await server.rows<{ n: number; ids: number }>(count);
    expect(once!.n).toBeGreaterThan(100);
    expect(once!.ids).toBe(once!.n);
    const second = await sluiceInProcess(['run', file, '--no-progress'], { service: emu, env });
    expect(second.code, second.stderr).toBe(0);
    expect(second.stderr).toMatch(/^starting company_profiles_clickhouse/m);
    expect(await server.rows(count)).toEqual([once]);
    // Without FINAL the second night's versions are there beside the first's until ClickHouse merges them.
    const [raw] = await server.rows<{ n: number }>('SELECT count() AS n FROM analytics.company_profiles');
    expect(raw!.n).toBeGreaterThanOrEqual(once!.n);
  });
});
