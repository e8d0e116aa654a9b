/**
 * A run's metrics in Prometheus's format, through prom-client, named by Prometheus's naming guide (`sluice_` prefix,
 * the base unit as a suffix, counters ending in `_total`). Every series is labelled `pipeline`, and `shard` for a
 * sharded run only (an unsharded run's series carry no empty `shard=""`); sink, outcome and severity where a number
 * is one of those. The run id is a label of one info metric only (`sluice_run_info`), so the series of every other
 * metric stay the same from night to night.
 *
 * Two kinds of numbers (counters.ts says why): counters, the pipeline's counts since its first run with `metrics:`
 * (restored from the state directory), which only go up; and gauges of the run being reported: its start, duration,
 * exit code, id, and the last success's and failure's times. A registry is built afresh at each report.
 */
import { Counter, Gauge, Registry } from 'prom-client';
import type { RunIdentity } from '../events.js';
import { COUNTERS, isCounterName, type CounterSample } from './counters.js';

export interface MetricsSnapshot {
  id: RunIdentity;
  startedAt: number;
  now: number;
  /** Every counter's value since the pipeline's first run, this run's counts included. */
  counters: readonly CounterSample[];
  /** Set once the run ended. */
  exitCode?: number;
  /** Seconds since the epoch, when known (this run's end, or an earlier run's). */
  lastSuccess?: number;
  lastFailure?: number;
}

export const LAST_SUCCESS = 'sluice_last_success_timestamp_seconds';
export const LAST_FAILURE = 'sluice_last_failure_timestamp_seconds';

/** Every gauge sluice exports, with its own labels; the guide lists the same names. */
export const GAUGES = {
  sluice_run_info: {
    help: 'The run these metrics are of (its id as in runs.jsonl and the logs); always 1.',
    labelNames: ['run'],
  },
  sluice_run_start_timestamp_seconds: { help: 'When the run started.', labelNames: [] },
  sluice_run_duration_seconds: {
    help: 'How long the run has taken so far (its whole duration once it ended).',
    labelNames: [],
  },
  sluice_run_exit_code: { help: 'The exit code the run ended with (absent while it runs).', labelNames: [] },
  [LAST_SUCCESS]: { help: 'When a run of the pipeline last succeeded.', labelNames: [] },
  [LAST_FAILURE]: { help: 'When a run of the pipeline last failed.', labelNames: [] },
} as const;

export function buildRegistry(s: MetricsSnapshot): Registry {
  const registers = [new Registry()];
  const own = { pipeline: s.id.pipeline, ...(s.id.shard !== undefined && { shard: s.id.shard }) };
  const ownNames = Object.keys(own);
  const gauge = (name: keyof typeof GAUGES, value: number, labels: Record<string, string> = {}): void => {
    const def = GAUGES[name];
    new Gauge({ name, help: def.help, labelNames: [...ownNames, ...def.labelNames], registers }).set(
      { ...own, ...labels },
      value,
    );
  };

  gauge('sluice_run_info', 1, { run: s.id.run });
  gauge('sluice_run_start_timestamp_seconds', s.startedAt / 1000);
  gauge('sluice_run_duration_seconds', (s.now - s.startedAt) / 1000);
  if (s.exitCode !== undefined) gauge('sluice_run_exit_code', s.exitCode);
  if (s.lastSuccess !== undefined) gauge(LAST_SUCCESS, s.lastSuccess);
  if (s.lastFailure !== undefined) gauge(LAST_FAILURE, s.lastFailure);

  const counters = new Map<string, Counter>();
  for (const c of s.counters) {
    if (!isCounterName(c.name)) continue;
    let counter = counters.get(c.name);
    if (!counter) {
      const def = COUNTERS[c.name];
      counter = new Counter({ name: c.name, help: def.help, labelNames: [...ownNames, ...def.labelNames], registers });
      counters.set(c.name, counter);
    }
    counter.inc({ ...c.labels, ...own }, c.value);
  }
  return registers[0]!;
}
