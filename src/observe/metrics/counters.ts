/**
 * The counters sluice exports, and how they add up across runs.
 *
 * Prometheus's `increase()` and `rate()` need a counter that only goes up for as long as its series lives: a nightly
 * job exporting each run's own counts as `_total` would make `increase(…[7d])` add up drops as resets and report
 * nonsense. So every counter here is the pipeline's (the shard's) count since its first run with `metrics:` — kept in
 * the state directory (counter-store.ts), restored at the start of each run, the run's own counts added on top. A
 * figure of one run alone is what `increase(x[1d])` gives for a nightly job; the run's own time, exit code and id are
 * gauges (registry.ts).
 *
 * Names follow Prometheus's naming guide: the `sluice_` prefix, the base unit before the `_total` suffix
 * (`sluice_read_bytes_total`), a plural noun for counts of things (`sluice_units_total`). Labels other than
 * `pipeline` and `shard` (added by the registry) are kept with each sample.
 */
import type { CheckResult, RunOutcome, RunTotals, SinkSchemaChange } from '../events.js';

/** One counter series: its name, its own labels (never `pipeline` or `shard`), its value. */
export interface CounterSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface CounterDef {
  help: string;
  labelNames: readonly string[];
}

/** Every counter sluice exports; the guide (docs/guides/observability.md) lists the same names. */
export const COUNTERS = {
  sluice_runs_total: { help: 'Runs that ended, by outcome (succeeded, failed, interrupted).', labelNames: ['outcome'] },
  sluice_units_total: { help: 'Work units, by outcome (committed, skipped, failed).', labelNames: ['outcome'] },
  sluice_records_committed_total: { help: 'Records committed into each sink.', labelNames: ['sink'] },
  sluice_read_bytes_total: { help: 'Bytes read from the service or the input files.', labelNames: [] },
  sluice_retries_total: { help: 'Requests and units tried again.', labelNames: [] },
  sluice_dead_letters_total: { help: 'Records dead-lettered.', labelNames: [] },
  // Both from the run's ledger of paid work (state/paid-ledger.ts), the numbers runs.jsonl records.
  sluice_paid_calls_total: {
    help: 'Calls the service billed (paid jobs, enrichments, request pages).',
    labelNames: [],
  },
  sluice_records_charged_total: { help: 'Records the service charged.', labelNames: [] },
  sluice_schema_changes_total: { help: 'Columns added to or widened in each sink.', labelNames: ['sink'] },
  sluice_checks_total: {
    help: 'Checks after the load, by sink, severity and outcome (passed, failed).',
    labelNames: ['sink', 'severity', 'outcome'],
  },
} as const satisfies Record<string, CounterDef>;

export type CounterName = keyof typeof COUNTERS;

export function isCounterName(name: string): name is CounterName {
  return Object.hasOwn(COUNTERS, name);
}

const RUN_OUTCOMES: readonly RunOutcome[] = ['succeeded', 'failed', 'interrupted'];

/** What one run counted so far (or in all, once `outcome` is known). */
export interface RunCounts {
  totals: RunTotals;
  schemaChanges: readonly SinkSchemaChange[];
  checks: readonly CheckResult[];
  outcome?: RunOutcome;
}

/**
 * The run's own counts as counter samples. Every series a pipeline always has is there from its first run, at 0 if
 * nothing happened (`outcome="failed"`, a sink's schema changes): a series that appears late makes its first
 * increase invisible to `increase()`.
 */
export function runCounters(run: RunCounts): CounterSample[] {
  const t = run.totals;
  const out: CounterSample[] = [];
  const add = (name: CounterName, value: number, labels: Record<string, string> = {}): void => {
    out.push({ name, labels, value });
  };
  for (const outcome of RUN_OUTCOMES) add('sluice_runs_total', run.outcome === outcome ? 1 : 0, { outcome });
  add('sluice_units_total', t.units.committed, { outcome: 'committed' });
  add('sluice_units_total', t.units.skipped, { outcome: 'skipped' });
  add('sluice_units_total', t.units.failed, { outcome: 'failed' });
  for (const r of t.recordsPerSink) {
    add('sluice_records_committed_total', r.records, { sink: r.sink });
    add('sluice_schema_changes_total', 0, { sink: r.sink });
  }
  for (const c of run.schemaChanges) add('sluice_schema_changes_total', c.changes.length, { sink: c.sink });
  add('sluice_read_bytes_total', t.bytes);
  add('sluice_retries_total', t.retries);
  add('sluice_dead_letters_total', t.deadLetters);
  add('sluice_paid_calls_total', t.paidCalls);
  add('sluice_records_charged_total', t.recordsCharged);
  for (const c of run.checks)
    add('sluice_checks_total', 1, { sink: c.sink, severity: c.severity, outcome: c.passed ? 'passed' : 'failed' });
  return sum([], out);
}

/** The key of a series: its name and labels, in a stable order. */
function seriesKey(s: Pick<CounterSample, 'name' | 'labels'>): string {
  const labels = Object.keys(s.labels)
    .sort()
    .map((k) => `${k}=${JSON.stringify(s.labels[k])}`);
  return `${s.name}{${labels.join(',')}}`;
}

/** `base` with `more` added, series by series, in `base`'s order then `more`'s new series. */
export function sum(base: readonly CounterSample[], more: readonly CounterSample[]): CounterSample[] {
  const out = new Map<string, CounterSample>();
  for (const s of [...base, ...more]) {
    const key = seriesKey(s);
    const have = out.get(key);
    out.set(key, have ? { ...have, value: have.value + s.value } : { ...s, labels: { ...s.labels } });
  }
  return [...out.values()];
}

/**
 * `next`, with no series lower than in `before`: what was reported once is never reported lower (a live count may
 * run ahead of the run's final one, e.g. a unit counted committed that then failed its sink's finish).
 */
export function atLeast(before: readonly CounterSample[], next: readonly CounterSample[]): CounterSample[] {
  const floor = new Map(before.map((s) => [seriesKey(s), s.value]));
  const out = next.map((s) => ({ ...s, value: Math.max(s.value, floor.get(seriesKey(s)) ?? 0) }));
  const have = new Set(out.map(seriesKey));
  for (const s of before) if (!have.has(seriesKey(s))) out.push(s);
  return out;
}

/**
 * The restored counters this pipeline still exports: series of a sink no longer in the pipeline (its table renamed,
 * the sink removed) are dropped rather than carried for ever; names this version does not export neither.
 */
export function stillExported(samples: readonly CounterSample[], sinks: readonly string[]): CounterSample[] {
  const current = new Set(sinks);
  return samples.filter(
    (s) =>
      isCounterName(s.name) &&
      Number.isFinite(s.value) &&
      s.value >= 0 &&
      (s.labels.sink === undefined || current.has(s.labels.sink)),
  );
}
