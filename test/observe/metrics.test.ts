/**
 * `metrics:` against a real Pushgateway (Debian's prometheus-pushgateway, started and stopped here): a run pushes
 * its metrics, and scraping the Pushgateway shows them with the values the run had — the records committed equal
 * the table's row count, the run id matches runs.jsonl. The textfile a run writes for node_exporter is parsed by the
 * Pushgateway itself (Prometheus's own parser: a malformed text is refused with 400).
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runPipeline } from '../../src/operations/run.js';
import { readRunHistory } from '../../src/state/run-history.js';
import { loadPipeline } from '../../src/pipeline/load.js';
import { startPushgateway, type Pushgateway } from '../support/pushgateway.js';
import { hasSystemPackage } from '../support/system-packages.js';

const quiet = { fresh: false, logFormat: 'text', quiet: true, progress: false } as const;
let gateway: Pushgateway;
let dir: string;

// Installed by the global setup where it can be; elsewhere named once at the top of the run, and skipped here.
const hasGateway = hasSystemPackage('pushgateway');

beforeAll(async () => {
  if (hasGateway) gateway = await startPushgateway();
  dir = mkdtempSync(path.join(tmpdir(), 'sluice-metrics-'));
}, 60_000);
afterAll(() => {
  gateway?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** The value of the series of `name` whose labels include every one of `labels`. */
function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(m[3]);
  }
  return undefined;
}

describe.skipIf(!hasGateway)('metrics', () => {
  it('pushes to a real Pushgateway: its scrape shows the run’s values, records equal the table’s count', async () => {
    const rows = Array.from({ length: 25 }, (_, i) => JSON.stringify({ id: i, name: `n${i}` })).join('\n');
    mkdirSync(path.join(dir, 'in'));
    writeFileSync(path.join(dir, 'in/a.jsonl'), rows + '\n');
    writeFileSync(path.join(dir, 'in/b.jsonl'), '{"id":100,"name":"x","extra":1}\n');
    const file = path.join(dir, 'p.yaml');
    writeFileSync(
      file,
      `version: 1
name: metered
source: { type: file, paths: [in], format: jsonl, concurrency: 1 }
sink: { type: duckdb, path: out.duckdb, table: t }
metrics:
  pushgateway: \${PUSHGATEWAY_URL}
  textfile: textfile/sluice.prom
`,
    );
    const summary = await runPipeline(await loadPipeline(file, { PUSHGATEWAY_URL: gateway.url }), quiet);

    const db = await DuckDBInstance.create(path.join(dir, 'out.duckdb'));
    const conn = await db.connect();
    const count = Number((await conn.runAndReadAll('SELECT count(*) AS n FROM t')).getRowObjectsJson()[0]!.n);
    conn.closeSync();
    db.closeSync();
    expect(count).toBe(26);

    const scraped = await gateway.scrape();
    const run = { job: 'sluice', pipeline: 'metered' };
    const sink = summary.outputs[0]!;
    expect(sample(scraped, 'sluice_records_committed_total', { ...run, sink })).toBe(count);
    expect(sample(scraped, 'sluice_units_total', { ...run, outcome: 'committed' })).toBe(2);
    expect(sample(scraped, 'sluice_units_total', { ...run, outcome: 'failed' })).toBe(0);
    expect(sample(scraped, 'sluice_dead_letters_total', run)).toBe(0);
    expect(sample(scraped, 'sluice_run_exit_code', run)).toBe(0);
    // b.jsonl (read second: one file at a time, in order) adds `extra`.
    expect(sample(scraped, 'sluice_schema_changes_total', { ...run, sink })).toBe(1);
    const [history] = await readRunHistory(path.join(dir, '.sluice/metered/runs.jsonl'));
    expect(sample(scraped, 'sluice_run_info', { ...run, run: history!.run })).toBe(1);
    expect(history!.run).toBe(summary.run);
    const lastSuccess = sample(scraped, 'sluice_last_success_timestamp_seconds', run)!;
    expect(lastSuccess * 1000).toBeGreaterThanOrEqual(Date.parse(history!.startedAt));

    // The textfile, parsed by Prometheus's own parser in the Pushgateway: accepted, and the same values.
    const text = readFileSync(path.join(dir, 'textfile/sluice.prom'), 'utf8');
    expect((await gateway.put('textfile_check', text)).status).toBe(200);
    const again = await gateway.scrape();
    expect(sample(again, 'sluice_records_committed_total', { job: 'textfile_check', sink })).toBe(count);
    // The parser does refuse what is not valid exposition text.
    expect((await gateway.put('textfile_check', 'sluice_broken{ 1\n')).status).toBe(400);
  }, 60_000);

  it('a failed run keeps the last success and records the failure', async () => {
    mkdirSync(path.join(dir, 'bad'));
    writeFileSync(path.join(dir, 'bad/c.jsonl'), '{"id":200}\n{not json\n');
    const file = path.join(dir, 'fail.yaml');
    writeFileSync(
      file,
      `version: 1
name: metered
source: { type: file, paths: [bad], format: jsonl }
sink: { type: duckdb, path: out.duckdb, table: t }
max_dead_letters: 0
metrics:
  pushgateway: \${PUSHGATEWAY_URL}
  textfile: textfile/sluice.prom
`,
    );
    const before = sample(await gateway.scrape(), 'sluice_last_success_timestamp_seconds', { pipeline: 'metered' });
    const err = await runPipeline(await loadPipeline(file, { PUSHGATEWAY_URL: gateway.url }), quiet).catch((e) => e);
    expect(err).toBeInstanceOf(Error);
    const scraped = await gateway.scrape();
    const run = { job: 'sluice', pipeline: 'metered' };
    expect(err.exitCode).toBe(4);
    expect(sample(scraped, 'sluice_run_exit_code', run)).toBe(4);
    expect(sample(scraped, 'sluice_dead_letters_total', run)).toBe(1);
    expect(sample(scraped, 'sluice_last_failure_timestamp_seconds', run)).toBeGreaterThan(0);
    expect(sample(scraped, 'sluice_last_success_timestamp_seconds', run)).toBe(before);
    const text = readFileSync(path.join(dir, 'textfile/sluice.prom'), 'utf8');
    expect(sample(text, 'sluice_last_success_timestamp_seconds', { pipeline: 'metered' })).toBe(before);
  }, 60_000);
});
