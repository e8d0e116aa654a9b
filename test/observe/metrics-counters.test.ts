/**
 * Metrics with Prometheus's semantics (issue 31), read as Prometheus reads them: the textfile and a real Pushgateway's
 * scrape parsed by a Prometheus text-format parser (`parse-prometheus-text-format`), over two nights of one pipeline.
 *
 * - Counters only go up across runs: each is the pipeline's count since its first run (kept in the state
 *   directory), so `increase()` between a scrape after night 1 and one after night 2 is night 2's own work, figure by
 *   figure as runs.jsonl records it.
 * - Names per Prometheus's naming guide: counters end in `_total` with the base unit before it, gauges never do, times
 *   are `_seconds` and instants `_timestamp_seconds`; every name is in the observability guide; no label is empty
 *   (an unsharded run has no `shard` label at all).
 * - The textfile and the Pushgateway show the same series with the same values.
 * - A run killed with SIGKILL mid-way never makes a counter go down: the next run restores what was saved.
 */
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import parsePrometheus from 'parse-prometheus-text-format';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runPipeline } from '../../src/operations/run.js';
import { loadPipeline } from '../../src/pipeline/load.js';
import { readRunHistory, type RunRecord } from '../../src/state/run-history.js';
import { ROOT, sluice } from '../e2e/harness.js';
import { startPushgateway, type Pushgateway } from '../support/pushgateway.js';
import { systemBinary } from '../support/system-packages.js';

const quiet = { fresh: false, logFormat: 'text', quiet: true, progress: false } as const;
const hasGateway = systemBinary('pushgateway') !== undefined;
const dirs: string[] = [];

afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

interface Series {
  name: string;
  type: string;
  labels: Record<string, string>;
  value: number;
}

/** Every sample of the text, through the Prometheus parser; `keep` picks the samples (and may drop labels). */
function seriesOf(text: string, keep: (s: Series) => Series | undefined = (s) => s): Series[] {
  const out: Series[] = [];
  for (const family of parsePrometheus(text))
    for (const m of family.metrics) {
      const s = keep({ name: family.name, type: family.type, labels: m.labels ?? {}, value: Number(m.value) });
      if (s) out.push(s);
    }
  return out;
}

const keyOf = (s: Pick<Series, 'name' | 'labels'>): string =>
  `${s.name}{${Object.entries(s.labels)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k}=${v}`)
    .join(',')}}`;

/** Prometheus's `increase()` over two samples of a counter: the difference, or the new value after a reset. */
function increase(before: number | undefined, after: number): number {
  return before === undefined || after < before ? after : after - before;
}

function value(series: readonly Series[], name: string, labels: Record<string, string> = {}): number | undefined {
  return series.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;
}

function workspace(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'sluice-metrics-counters-'));
  dirs.push(dir);
  mkdirSync(path.join(dir, 'in'));
  return dir;
}

function writeInput(dir: string, file: string, rows: readonly object[], extra = ''): void {
  writeFileSync(path.join(dir, 'in', file), rows.map((r) => JSON.stringify(r)).join('\n') + '\n' + extra);
}

const rows = (from: number, n: number, more: object = {}): object[] =>
  Array.from({ length: n }, (_, i) => ({ id: from + i, name: `n${from + i}`, ...more }));

describe.skipIf(!hasGateway)('counters across runs, through a Prometheus parser', () => {
  let gateway: Pushgateway;
  beforeAll(async () => {
    gateway = await startPushgateway();
  }, 60_000);
  afterAll(() => gateway?.stop());

  it('two nights: every counter goes up by night 2’s own work; names per the guide; textfile = Pushgateway', async () => {
    const dir = workspace();
    writeInput(dir, 'a.jsonl', rows(0, 20));
    writeInput(dir, 'b.jsonl', rows(20, 5));
    const file = path.join(dir, 'p.yaml');
    writeFileSync(
      file,
      `version: 1
name: nightly
source: { type: file, paths: [in], format: jsonl, incremental: true, concurrency: 1 }
# Decoded in JS, where bytes read are counted (the fast path hands the file to DuckDB whole).
fast_path: false
sink:
  type: duckdb
  path: out.duckdb
  table: t
  checks: [{ type: row_count, min: 1, severity: warn }]
metrics:
  pushgateway: \${PUSHGATEWAY_URL}
  textfile: textfile/sluice.prom
`,
    );
    const env = { PUSHGATEWAY_URL: gateway.url };
    const textfile = path.join(dir, 'textfile/sluice.prom');
    const fromGateway = (s: Series): Series | undefined => {
      if (!s.name.startsWith('sluice_') || s.labels.job !== 'sluice' || s.labels.pipeline !== 'nightly') return;
      // The gateway's own labels: the group's job, and an `instance` it adds when the group names none.
      const { job: _job, instance: _instance, ...labels } = s.labels;
      return { ...s, labels };
    };

    await runPipeline(await loadPipeline(file, env), quiet);
    const night1 = seriesOf(readFileSync(textfile, 'utf8'));
    const gateway1 = seriesOf(await gateway.scrape(), fromGateway);

    // Night 2: one new file, with a new column (a schema change) and a line that is not JSON (a dead letter).
    writeInput(dir, 'c.jsonl', rows(25, 7, { extra: 1 }), '{not json\n');
    await runPipeline(await loadPipeline(file, env), quiet);
    const night2 = seriesOf(readFileSync(textfile, 'utf8'));
    const gateway2 = seriesOf(await gateway.scrape(), fromGateway);
    const history = await readRunHistory(path.join(dir, '.sluice/nightly/runs.jsonl'));
    expect(history.map((r) => r.status)).toEqual(['succeeded', 'succeeded']);
    const second: RunRecord = history[1]!;
    const sink = second.sinks![0]!.sink;

    // Counters: never lower on night 2, and their increase is exactly night 2's figures in runs.jsonl.
    const counters2 = night2.filter((s) => s.type === 'COUNTER');
    expect(counters2.length).toBeGreaterThan(8);
    const before = new Map(night1.map((s) => [keyOf(s), s.value]));
    for (const s of counters2) expect(s.value, keyOf(s)).toBeGreaterThanOrEqual(before.get(keyOf(s)) ?? 0);
    const inc = (name: string, labels: Record<string, string> = {}): number =>
      increase(value(night1, name, labels), value(night2, name, labels)!);
    expect(second.records).toBe(7);
    expect(inc('sluice_records_committed_total', { sink })).toBe(second.records);
    expect(value(night2, 'sluice_records_committed_total', { sink })).toBe(32);
    expect(inc('sluice_units_total', { outcome: 'committed' })).toBe(second.units!.committed);
    expect(inc('sluice_units_total', { outcome: 'skipped' })).toBe(second.units!.skipped);
    expect(inc('sluice_units_total', { outcome: 'failed' })).toBe(second.units!.failed);
    expect(second.bytes).toBeGreaterThan(0);
    expect(inc('sluice_read_bytes_total')).toBe(second.bytes);
    expect(inc('sluice_retries_total')).toBe(second.retries);
    expect(second.deadLetters).toBe(1);
    expect(inc('sluice_dead_letters_total')).toBe(1);
    // Local files cost nothing (paid figures are proved against the emulator's bill: test/e2e/paid-nights.test.ts).
    expect(inc('sluice_paid_calls_total')).toBe(second.paidCalls);
    expect(inc('sluice_records_charged_total')).toBe(second.recordsCharged);
    expect(inc('sluice_schema_changes_total', { sink })).toBe(1);
    expect(inc('sluice_checks_total', { sink, severity: 'warn', outcome: 'passed' })).toBe(1);
    expect(inc('sluice_runs_total', { outcome: 'succeeded' })).toBe(1);
    expect(value(night2, 'sluice_runs_total', { outcome: 'succeeded' })).toBe(2);
    expect(inc('sluice_runs_total', { outcome: 'failed' })).toBe(0);
    // The run's own figures are gauges of the last run.
    expect(value(night2, 'sluice_run_info', { run: second.run })).toBe(1);
    expect(value(night2, 'sluice_run_start_timestamp_seconds')! * 1000).toBe(Date.parse(second.startedAt));
    expect(value(night2, 'sluice_run_exit_code')).toBe(0);

    // Names per Prometheus's naming guide, every one documented, no empty label; unsharded: no `shard` label.
    const guide = readFileSync(path.join(ROOT, 'docs/guides/observability.md'), 'utf8');
    const names = new Set(night2.map((s) => s.name));
    expect([...names].sort()).toEqual(
      [
        'sluice_checks_total',
        'sluice_dead_letters_total',
        'sluice_last_success_timestamp_seconds',
        'sluice_paid_calls_total',
        'sluice_read_bytes_total',
        'sluice_records_charged_total',
        'sluice_records_committed_total',
        'sluice_retries_total',
        'sluice_run_duration_seconds',
        'sluice_run_exit_code',
        'sluice_run_info',
        'sluice_run_start_timestamp_seconds',
        'sluice_runs_total',
        'sluice_schema_changes_total',
        'sluice_units_total',
      ].sort(),
    );
    for (const s of night2) {
      expect(s.name).toMatch(/^sluice_[a-z][a-z0-9_]*[a-z]$/);
      if (s.type === 'COUNTER') expect(s.name, 'a counter ends in _total').toMatch(/_total$/);
      else expect(s.name, 'only counters end in _total').not.toMatch(/_total$/);
      // A unit is the name's suffix (before `_total`), in its base unit, plural.
      for (const unit of ['bytes', 'seconds'])
        if (s.name.includes(unit)) expect(s.name).toMatch(new RegExp(`_${unit}(_total)?$`));
      expect(s.name).not.toMatch(/_(milliseconds|ms|kilobytes|kb|count)(_|$)/);
      if (s.name.includes('timestamp')) expect(s.name).toMatch(/_timestamp_seconds$/);
      if (s.name.endsWith('_info')) expect(s.value).toBe(1);
      expect(guide, `${s.name} is documented`).toContain(`\`${s.name}`);
      expect(Object.keys(s.labels)).not.toContain('shard');
      expect(s.labels.pipeline).toBe('nightly');
      for (const [k, v] of Object.entries(s.labels)) expect(v, `${s.name}{${k}}`).not.toBe('');
    }

    // The Pushgateway shows exactly the textfile's series, with the same values, on both nights.
    const byKey = (series: readonly Series[]): Record<string, number> =>
      Object.fromEntries(series.map((s) => [keyOf(s), s.value]));
    expect(byKey(gateway1)).toEqual(byKey(night1));
    expect(byKey(gateway2)).toEqual(byKey(night2));
  }, 60_000);
});

describe('a killed run', () => {
  it('SIGKILL after a commit: the counters saved then are restored; none goes down, none restarts', async () => {
    const dir = workspace();
    for (let i = 0; i < 6; i++) writeInput(dir, `f${i}.jsonl`, rows(i * 10, 10));
    const file = path.join(dir, 'p.yaml');
    writeFileSync(
      file,
      `version: 1
name: killed
source: { type: file, paths: [in], format: jsonl, incremental: true, concurrency: 1 }
sink: { type: jsonl, path: out }
metrics:
  textfile: sluice.prom
`,
    );
    const textfile = path.join(dir, 'sluice.prom');
    const records = (): number =>
      value(seriesOf(readFileSync(textfile, 'utf8')), 'sluice_records_committed_total') ?? Number.NaN;

    // Night 1 loads two files; night 2 finds four more and dies (kill -9) after its third commit; night 3 resumes.
    mkdirSync(path.join(dir, 'later'));
    for (let i = 2; i < 6; i++) cpSync(path.join(dir, `in/f${i}.jsonl`), path.join(dir, `later/f${i}.jsonl`));
    for (let i = 2; i < 6; i++) rmSync(path.join(dir, `in/f${i}.jsonl`));
    const night1 = await sluice(['run', file, '--quiet'], { cwd: dir });
    expect(night1.code, night1.stderr).toBe(0);
    expect(records()).toBe(20);
    for (let i = 2; i < 6; i++) cpSync(path.join(dir, `later/f${i}.jsonl`), path.join(dir, `in/f${i}.jsonl`));
    const killed = await sluice(['run', file, '--quiet'], {
      cwd: dir,
      env: { SLUICE_FAILPOINTS: 'engine:after-commit=3' },
    });
    expect(killed.signal).toBe('SIGKILL');
    const saved = JSON.parse(readFileSync(path.join(dir, '.sluice/killed/metrics.json'), 'utf8')) as {
      counters: { name: string; value: number }[];
    };
    const savedRecords = saved.counters.find((c) => c.name === 'sluice_records_committed_total')!.value;
    // Saved after each commit: at least night 1's and the killed run's first commits (the last one may not be).
    expect(savedRecords).toBeGreaterThanOrEqual(30);
    expect(savedRecords).toBeLessThanOrEqual(50);

    const night3 = await sluice(['run', file, '--quiet'], { cwd: dir });
    expect(night3.code, night3.stderr).toBe(0);
    const after = seriesOf(readFileSync(textfile, 'utf8'));
    // The resumed run adds what it committed (the units left) to what was saved: never below it.
    const resumed = (await readRunHistory(path.join(dir, '.sluice/killed/runs.jsonl'))).at(-1)!;
    expect(resumed.resumed).toBe(true);
    expect(value(after, 'sluice_records_committed_total')).toBe(savedRecords + resumed.records!);
    expect(value(after, 'sluice_records_committed_total')).toBeGreaterThan(20);
    expect(value(after, 'sluice_runs_total', { outcome: 'succeeded' })).toBe(2);
  }, 60_000);
});
