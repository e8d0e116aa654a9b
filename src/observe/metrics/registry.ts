/**
 * A run's metrics in Prometheus's format, through prom-client: named by Prometheus's conventions (`sluice_` prefix,
 * counters end in `_total`, times in `_seconds`), labelled by pipeline and shard (and sink where a number is a
 * sink's). The run id is a label of one info metric only (`sluice_run_info`), so the series of every other metric
 * stay the same from night to night. A registry is built afresh from the run's totals at each report: the values
 * are the run's, whatever was reported before.
 */
import { Counter, Gauge, Registry } from 'prom-client';
import type { CheckResult, RunIdentity, RunTotals, SinkSchemaChange } from '../events.js';

export interface MetricsSnapshot {
  id: RunIdentity;
  startedAt: number;
  now: number;
  totals: RunTotals;
  schemaChanges: readonly SinkSchemaChange[];
  checks: readonly CheckResult[];
  /** Set once the run ended. */
  ended?: { exitCode: number; succeeded: boolean };
  /** The last success / failure before this run (seconds since the epoch), carried into a rewritten textfile. */
  previous?: { lastSuccess?: number; lastFailure?: number };
}

export const LAST_SUCCESS = 'sluice_last_success_timestamp_seconds';
export const LAST_FAILURE = 'sluice_last_failure_timestamp_seconds';

export function buildRegistry(s: MetricsSnapshot): Registry {
  const registers = [new Registry()];
  const run = { pipeline: s.id.pipeline, shard: s.id.shard ?? '' };
  const gauge = (name: string, help: string, labelNames: string[] = []): Gauge =>
    new Gauge({ name, help, labelNames: ['pipeline', 'shard', ...labelNames], registers });
  const counter = (name: string, help: string, labelNames: string[] = []): Counter =>
    new Counter({ name, help, labelNames: ['pipeline', 'shard', ...labelNames], registers });

  gauge('sluice_run_info', 'The run these metrics are of (the run id as in runs.jsonl and the logs).', ['run']).set(
    { ...run, run: s.id.run },
    1,
  );
  gauge('sluice_run_start_timestamp_seconds', 'When the run started.').set(run, s.startedAt / 1000);
  gauge('sluice_run_duration_seconds', 'How long the run has taken so far (its whole duration once it ended).').set(
    run,
    (s.now - s.startedAt) / 1000,
  );
  const units = counter('sluice_units_total', 'Work units of the run, by outcome.', ['outcome']);
  const u = s.totals.units;
  for (const [outcome, n] of [
    ['committed', u.committed],
    ['skipped', u.skipped],
    ['failed', u.failed],
  ] as const)
    units.inc({ ...run, outcome }, n);
  const records = counter('sluice_records_committed_total', 'Records the run committed into each sink.', ['sink']);
  for (const r of s.totals.recordsPerSink) records.inc({ ...run, sink: r.sink }, r.records);
  counter('sluice_bytes_read_total', 'Bytes the run read from the service or its input files.').inc(
    run,
    s.totals.bytes,
  );
  counter('sluice_retries_total', 'Requests and units tried again.').inc(run, s.totals.retries);
  counter('sluice_dead_letters_total', 'Records the run dead-lettered.').inc(run, s.totals.deadLetters);
  counter('sluice_paid_calls_total', 'Calls that started paid work at the service.').inc(run, s.totals.paidCalls);
  const schema = counter('sluice_schema_changes_total', 'Columns the run added to or widened in a sink.', ['sink']);
  for (const c of s.schemaChanges) schema.inc({ ...run, sink: c.sink }, c.changes.length);
  if (s.checks.length > 0) {
    const checks = counter('sluice_checks_total', 'Checks after the load, by sink, severity and outcome.', [
      'sink',
      'severity',
      'outcome',
    ]);
    for (const c of s.checks)
      checks.inc({ ...run, sink: c.sink, severity: c.severity, outcome: c.passed ? 'passed' : 'failed' });
  }
  if (s.ended) gauge('sluice_run_exit_code', 'The exit code the run ended with.').set(run, s.ended.exitCode);
  const nowSeconds = s.now / 1000;
  const lastSuccess = s.ended?.succeeded ? nowSeconds : s.previous?.lastSuccess;
  const lastFailure = s.ended && !s.ended.succeeded ? nowSeconds : s.previous?.lastFailure;
  // Set only when known: a Pushgateway keeps an earlier push's value of a metric this push does not carry.
  if (lastSuccess !== undefined)
    gauge(LAST_SUCCESS, 'When a run of the pipeline last succeeded.').set(run, lastSuccess);
  if (lastFailure !== undefined) gauge(LAST_FAILURE, 'When a run of the pipeline last failed.').set(run, lastFailure);
  return registers[0]!;
}
