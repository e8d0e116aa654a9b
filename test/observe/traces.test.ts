/**
 * Traces over OTLP/HTTP to a receiver this test starts (test/support/otlp-receiver.ts decodes the protobuf payload
 * with OpenTelemetry's own definitions): a run against the embedded emulator, configured only by the standard
 * OTEL_* variables, exports one run span whose children are its units and its service calls (the paid filter call
 * marked), every one carrying the run id that runs.jsonl records.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runPipeline } from '../../src/operations/run.js';
import { readRunHistory } from '../../src/state/run-history.js';
import { loadPipeline } from '../../src/pipeline/load.js';
import { createLogger } from '../../src/runtime/logger.js';
import { startHostileServer } from '../support/hostile-http.js';
import { startOtlpReceiver, type OtlpReceiver } from '../support/otlp-receiver.js';
import { closedUrl } from '../support/webhook-receiver.js';

const quiet = { fresh: false, logFormat: 'text', quiet: true, progress: false } as const;
const OTEL = { OTEL_EXPORTER_OTLP_ENDPOINT: '', OTEL_SERVICE_NAME: 'nightly-sluice' };
let receiver: OtlpReceiver;
let dir: string;

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  dir = mkdtempSync(path.join(tmpdir(), 'sluice-traces-'));
  Object.assign(process.env, { ...OTEL, OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint });
});
afterAll(async () => {
  for (const k of Object.keys(OTEL)) delete process.env[k];
  await receiver?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A snapshot of `size` records from the embedded emulator into DuckDB, as pipeline `name`. */
function snapshotPipeline(name: string, size: number): string {
  const file = path.join(dir, `${name}.yaml`);
  writeFileSync(
    file,
    `version: 1
name: ${name}
service:
  base_url: emulator
  api_key: traces-key-0b7d
  emulator: { seed: 2, size: ${size}, time_scale: 1000 }
source:
  type: snapshot
  dataset_id: gd_l1vikfnt1wgvvqz95w
  filter: { name: followers, operator: '>=', value: 0 }
  records_limit: 100000
  download: { format: jsonl, compress: true, batch_size: 1000 }
  poll: { interval_ms: 20 }
sink: { type: duckdb, path: ${name}.duckdb, table: t }
`,
  );
  return file;
}

describe('traces', () => {
  it('one run span, with unit and service-call children, carrying the run id of runs.jsonl', async () => {
    const file = snapshotPipeline('traced', 2001);
    const summary = await runPipeline(await loadPipeline(file, {}), quiet);
    const [history] = await readRunHistory(path.join(dir, '.sluice/traced/runs.jsonl'));
    const runId = history!.run;
    expect(summary.run).toBe(runId);

    expect(new Set(receiver.contentTypes)).toEqual(new Set(['application/x-protobuf']));
    const runs = receiver.spans.filter((s) => s.name === 'sluice run');
    expect(runs).toHaveLength(1);
    const run = runs[0]!;
    expect(run.parentSpanId).toBe('');
    expect(run.attributes).toMatchObject({
      'sluice.run_id': runId,
      'sluice.pipeline': 'traced',
      'sluice.exit_code': 0,
    });
    expect(run.resource['service.name']).toBe('nightly-sluice');

    const units = receiver.spans.filter((s) => s.name === 'sluice unit');
    expect(units.length).toBe(summary.units.done);
    expect(units.length).toBeGreaterThan(1);
    for (const u of units) {
      expect(u.parentSpanId).toBe(run.spanId);
      expect(u.traceId).toBe(run.traceId);
      expect(u.attributes['sluice.run_id']).toBe(runId);
      expect(u.events.map((e) => e.name)).toContain('committed');
    }

    const calls = receiver.spans.filter((s) => s.name.startsWith('HTTP '));
    const unitIds = new Set(units.map((u) => u.spanId));
    // The downloads are the units' children; planning's calls (the filter job, its status) the run's.
    expect(calls.filter((c) => unitIds.has(c.parentSpanId)).length).toBeGreaterThanOrEqual(units.length);
    const paid = calls.filter((c) => c.attributes['sluice.paid'] === true);
    expect(paid.map((c) => [c.name, c.attributes['url.path'], c.parentSpanId])).toEqual([
      ['HTTP POST', '/datasets/filter', run.spanId],
    ]);
    for (const c of calls) {
      expect(c.attributes['sluice.run_id']).toBe(runId);
      expect(c.traceId).toBe(run.traceId);
    }
  }, 60_000);
});

describe('a trace endpoint that fails', () => {
  /** A run whose traces go to `endpoint`; its warnings. */
  async function warningsWith(endpoint: string, name: string): Promise<string[]> {
    const saved = process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = endpoint;
    process.env.OTEL_EXPORTER_OTLP_TIMEOUT = '2000';
    const lines: string[] = [];
    const log = createLogger({ format: 'text', level: 'warn', write: (l) => lines.push(l) });
    try {
      const file = snapshotPipeline(name, 200);
      await runPipeline(await loadPipeline(file, {}), quiet, { log });
    } finally {
      process.env.OTEL_EXPORTER_OTLP_ENDPOINT = saved;
      delete process.env.OTEL_EXPORTER_OTLP_TIMEOUT;
    }
    return lines;
  }

  it('an endpoint answering 500: one warning naming it and the status', async () => {
    const failing = await startHostileServer({ kind: 'echo', status: 500 });
    try {
      const lines = await warningsWith(failing.url, 'answers-500');
      expect(failing.requests.length).toBeGreaterThan(0);
      expect(lines).toEqual([
        expect.stringMatching(
          /^warn: could not export the run's traces to http:\/\/127\.0\.0\.1:\d+\/v1\/traces: HTTP 500\b/,
        ),
      ]);
    } finally {
      await failing.close();
    }
  }, 60_000);

  it('an endpoint nobody listens on: one warning naming it and the cause', async () => {
    const refused = new URL(await closedUrl()).origin;
    const lines = await warningsWith(refused, 'refused');
    expect(lines).toEqual([
      expect.stringMatching(
        /^warn: could not export the run's traces to http:\/\/127\.0\.0\.1:\d+\/v1\/traces: ECONNREFUSED/,
      ),
    ]);
  }, 60_000);
});
