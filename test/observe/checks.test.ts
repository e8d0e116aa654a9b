/**
 * Checks after the load, on DuckDB, PostgreSQL (a throwaway cluster), Parquet and ClickHouse (a throwaway server, where
 * this machine has its package) at once: every kind passing and
 * failing on each sink, with violating rows in the report; `warn` failures leave the run succeeding; an `error`
 * failure ends it with exit code 6 (through the CLI, in this process), its data committed, its results in the
 * summary, runs.jsonl and a notification, its run id on every JSON log line and in both sinks' `_sluice_runs`.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT_CODES } from '../../src/core/errors.js';
import { runPipeline } from '../../src/operations/run.js';
import { silentLogger } from '../../src/runtime/logger.js';
import { readRunHistory } from '../../src/state/run-history.js';
import type { CheckResult } from '../../src/observe/events.js';
import { loadPipeline } from '../../src/pipeline/load.js';
import { sluiceInProcess } from '../e2e/harness.js';
import { startClickHouse, type ClickHouseServer } from '../support/clickhouse-server.js';
import { hasPostgres, startPostgres, type PostgresServer } from '../support/postgres-server.js';
import { systemBinary } from '../support/system-packages.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

const quiet = { fresh: false, logFormat: 'text', quiet: true, progress: false } as const;
let pg: PostgresServer;
let ch: ClickHouseServer | undefined;
let hook: WebhookReceiver;
let dir: string;
const withClickHouse = systemBinary('clickhouse') !== undefined;

beforeAll(async () => {
  [pg, hook, ch] = await Promise.all([
    startPostgres(),
    startWebhookReceiver(),
    withClickHouse ? startClickHouse() : undefined,
  ]);
  await pg.createDatabase('checks');
  dir = mkdtempSync(path.join(tmpdir(), 'sluice-checks-'));
  mkdirSync(path.join(dir, 'in'));
  const at = new Date(Date.now() - 3 * 3_600_000).toISOString();
  const rows = [
    { id: 1, name: 'a', country: 'US', at },
    { id: 2, name: null, country: 'DE', at },
    { id: 2, name: 'c', country: 'XX', at },
  ];
  writeFileSync(path.join(dir, 'in/rows.jsonl'), rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
}, 120_000);
afterAll(async () => {
  await hook?.close();
  pg?.stop();
  ch?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** Each kind twice: one that passes on the three rows, one that fails (at `failing` severity). */
const checks = (failing: 'warn' | 'error') => `
    checks:
      - { type: row_count, min: 3 }
      - { type: row_count, max: 2, severity: warn }
      - { type: row_count, scope: run, min: 3 }
      - { type: row_count, scope: run, max: 1, severity: warn }
      - { type: freshness, column: at, max_age: 1d }
      - { type: freshness, column: at, max_age: 1m, severity: warn }
      - { type: not_null, columns: [id, country] }
      - { type: not_null, columns: [name], severity: warn }
      - { type: unique, columns: [name] }
      - { type: unique, columns: [id], severity: ${failing} }
      - { type: accepted_values, column: country, values: [US, DE, XX] }
      - { type: accepted_values, column: country, values: [US, DE], severity: warn }
      - { type: sql, name: no_negative_ids, sql: "SELECT * FROM {table} WHERE id < 0" }
      - { type: sql, name: no_xx, sql: "SELECT id, country FROM {table} WHERE country = 'XX'", severity: warn }`;

function pipeline(name: string, failing: 'warn' | 'error'): string {
  const file = path.join(dir, `${name}.yaml`);
  writeFileSync(
    file,
    `version: 1
name: ${name}
source: { type: file, paths: [in], format: jsonl }
sinks:
  - type: duckdb
    path: out.duckdb
    table: ${name}${checks(failing)}
  - type: postgres
    url: \${PG_URL}
    table: ${name}${checks(failing)}
  - type: parquet
    path: parquet-${name}${checks(failing)}${
      withClickHouse
        ? `
  - type: clickhouse
    url: \${CH_URL}
    table: ${name}${checks(failing)}`
        : ''
    }
notify:
  webhooks: [{ url: "\${HOOK_URL}", on: [checks] }]
`,
  );
  return file;
}

const SINKS = ['duckdb', 'postgres', 'parquet', ...(withClickHouse ? ['clickhouse'] : [])];
const KINDS = ['row_count', 'freshness', 'not_null', 'unique', 'accepted_values', 'sql'];

// Every scenario loads Postgres beside DuckDB and Parquet (and ClickHouse where it is here): without PostgreSQL here
// (named at the top of the run) the file is skipped.
describe.skipIf(!hasPostgres())('checks after the load', () => {
  it('every kind passes and fails on DuckDB, Postgres, Parquet and ClickHouse; `warn` failures only warn', async () => {
    const env = { PG_URL: pg.socketUrl('checks'), HOOK_URL: hook.url, CH_URL: ch?.url() ?? '' };
    const summary = await runPipeline(await loadPipeline(pipeline('warned', 'warn'), env), quiet, {
      log: silentLogger,
    });
    const results = summary.checks!;
    expect(results).toHaveLength(SINKS.length * 14);
    for (const sink of SINKS)
      for (const kind of KINDS) {
        const mine = results.filter((r) => r.sink.startsWith(sink) && r.type === kind);
        expect(
          mine.map((r) => r.passed),
          `${sink} ${kind}: ${JSON.stringify(mine)}`,
        ).toEqual(kind === 'row_count' ? [true, false, true, false] : [true, false]);
      }
    const failed = (sink: string, name: string): CheckResult =>
      results.find((r) => r.sink.startsWith(sink) && r.name === name && !r.passed)!;
    for (const sink of SINKS) {
      expect(failed(sink, 'not_null(name)')).toMatchObject({ violations: 1, sample: [{ country: 'DE' }] });
      expect(failed(sink, 'unique(id)')).toMatchObject({ violations: 1, message: '1 value(s) of id that repeat' });
      expect(Number(failed(sink, 'unique(id)').sample![0]!.id)).toBe(2);
      expect(failed(sink, 'accepted_values(country)').sample).toEqual([{ value: 'XX', count: expect.anything() }]);
      expect(failed(sink, 'no_xx')).toMatchObject({ violations: 1, sample: [{ country: 'XX' }] });
      expect(failed(sink, 'row_count(run)').message).toBe('3 row(s) committed by this run, expected ≤ 1');
      expect(failed(sink, 'freshness(at)').message).toMatch(/\(3h old\), older than 1m$/);
    }
    // Warnings are told too.
    const note = await hook.waitFor((r) => r.body.event === 'checks' && r.body.run === summary.run);
    expect(note.body.status).toBe('succeeded');
    expect(note.body.checks.filter((c: CheckResult) => !c.passed)).toHaveLength(SINKS.length * 7);
  }, 120_000);

  it('a failed `error` check exits 6 with the data committed, told in the summary, runs.jsonl, a notification and the logs', async () => {
    const file = pipeline('strict', 'error');
    const r = await sluiceInProcess(['run', file, '--no-progress', '--log-format', 'json'], {
      env: { PG_URL: pg.socketUrl('checks'), HOOK_URL: hook.url, CH_URL: ch?.url() ?? '' },
    });
    expect(r.code).toBe(EXIT_CODES.checks);
    const out = JSON.parse(r.stdout.trim());
    expect(out).toMatchObject({ status: 'failed', pipeline: 'strict', records: 3 });
    expect(out.error).toMatch(new RegExp(`^${SINKS.length} check\\(s\\) failed: unique\\(id\\) on duckdb `));
    const [history] = await readRunHistory(path.join(dir, '.sluice/strict/runs.jsonl'));
    expect(history).toMatchObject({ run: out.run, status: 'failed', exitCode: 6 });
    expect(history!.checks).toEqual(out.checks);

    // Every JSON log line of the run names it (the same id as runs.jsonl and the summary).
    const lines = r.stderr
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.length).toBeGreaterThan(3);
    for (const line of lines) expect(line).toMatchObject({ run: out.run, pipeline: 'strict' });

    const note = await hook.waitFor((x) => x.body.event === 'checks' && x.body.run === out.run);
    expect(note.body).toMatchObject({ status: 'failed', exit_code: 6 });

    // The data stays, and both databases record the run under the same id.
    const [count] = await pg.query('checks', 'SELECT count(*)::int AS n FROM public.strict');
    expect(count!.n).toBe(3);
    const pgRuns = await pg.query(
      'checks',
      `SELECT pipeline, run_id, status, units::int, records::int FROM public._sluice_runs ORDER BY started_at`,
    );
    expect(pgRuns.at(-1)).toEqual({ pipeline: 'strict', run_id: out.run, status: 'complete', units: 1, records: 3 });
  }, 120_000);
});
