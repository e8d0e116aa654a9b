/** What a run tells at its end: the summary's counts, as text, and a failure carrying them. */
import { SluiceError } from '../core/errors.js';
import { describePaid, NO_PAID_WORK, type PaidFigures } from '../core/paid-work.js';
import { printableLine } from '../core/printable.js';
import type { Counters, SchemaChange } from '../core/types.js';
import type { RunSummary, SinkSchemaChanges } from './api.js';
import { errorText } from '../core/error-text.js';
import { formatReasons } from './failure-budget.js';
import { formatBytes } from '../core/limits.js';
import { formatDuration } from '../core/duration.js';
import type { CheckResult } from '../observe/events.js';
import { formatCheck } from '../observe/checks/run-checks.js';

/** The sources' counters plus what only the engine counts. */
export interface RunCounters extends Counters {
  nativeLoads: number;
  nativeFallbacks: number;
}

export function newRunCounters(): RunCounters {
  return { records: 0, bytes: 0, retries: 0, deadLetters: 0, nativeLoads: 0, nativeFallbacks: 0 };
}

/**
 * Records committed by the units of one attempt (a run invocation). A unit's records are counted once however many
 * sinks committed it and whichever of its tries did: the largest count any sink committed for it (a sink may have
 * dead-lettered rows it could not store). What the source read beyond that — tries that failed and were read
 * again, units that failed or were abandoned — is `records read` minus these.
 */
export class CommittedRecords {
  private readonly byUnit = new Map<string, number>();
  private readonly bySink = new Map<unknown, number>();

  note(unitId: string, sink: unknown, result: { committed: boolean; records: number }): void {
    if (!result.committed) return;
    this.byUnit.set(unitId, Math.max(this.byUnit.get(unitId) ?? 0, result.records));
    this.bySink.set(sink, (this.bySink.get(sink) ?? 0) + result.records);
  }

  get total(): number {
    let n = 0;
    for (const v of this.byUnit.values()) n += v;
    return n;
  }

  of(sink: unknown): number {
    return this.bySink.get(sink) ?? 0;
  }
}

export function buildSummary(
  pipeline: string,
  units: RunSummary['units'],
  counters: RunCounters,
  startedAt: number,
  outputs: string[],
  deadLetterReasons: RunSummary['deadLetterReasons'] = [],
  schemaChanges: SinkSchemaChanges[] = [],
  committedRecords: number = counters.records,
  paid: PaidFigures = NO_PAID_WORK,
): RunSummary {
  return {
    pipeline,
    units,
    records: committedRecords,
    recordsRead: counters.records,
    bytes: counters.bytes,
    retries: counters.retries,
    deadLetters: counters.deadLetters,
    deadLetterReasons,
    nativeLoads: counters.nativeLoads,
    nativeFallbacks: counters.nativeFallbacks,
    durationMs: Date.now() - startedAt,
    outputs,
    schemaChanges,
    paidCalls: paid.paidCalls,
    recordsCharged: paid.recordsCharged,
    paid: paid.paid,
  };
}

/** Collects the schema changes of every commit, per sink, in the order they were made. */
export class SchemaChangeLog {
  private readonly bySink = new Map<string, SchemaChange[]>();

  note(sink: string, changes: readonly SchemaChange[] | undefined): void {
    if (!changes || changes.length === 0) return;
    const list = this.bySink.get(sink) ?? [];
    list.push(...changes);
    this.bySink.set(sink, list);
  }

  list(): SinkSchemaChanges[] {
    return [...this.bySink].map(([sink, changes]) => ({ sink, changes }));
  }
}

/** `added extra VARCHAR`, `widened price BIGINT → DOUBLE`. */
export function formatSchemaChange(c: SchemaChange): string {
  return c.change === 'added' ? `added ${c.column} ${c.to}` : `widened ${c.column} ${c.from ?? '?'} → ${c.to}`;
}

/** The error a failed run throws: the cause, told as a SluiceError with a hint, carrying the partial summary. */
export function runFailure(failure: unknown, summary: RunSummary): SluiceError & { summary: RunSummary } {
  const err =
    failure instanceof SluiceError
      ? failure
      : new SluiceError(errorText(failure), {
          hint: 'fix the cause and run the same command again: committed units are kept and skipped',
          cause: failure,
        });
  return Object.assign(err, { summary });
}

/** What was read beyond the committed records, said only when there was some (a retry, a failed unit). */
function readBeyond(s: RunSummary): string {
  const extra = s.recordsRead - s.records;
  return extra > 0
    ? ` committed (${s.recordsRead.toLocaleString('en-US')} read: ${extra.toLocaleString('en-US')} in tries that failed or were not committed)`
    : '';
}

export function formatSummary(s: RunSummary): string {
  const secs = s.durationMs / 1000;
  const lines = [
    `done: ${s.pipeline}`,
    `  units        ${s.units.done}/${s.units.total} (${s.units.skipped} already committed, ${s.units.failed} failed)`,
    `  records      ${s.records.toLocaleString('en-US')}${readBeyond(s)}`,
    `  bytes        ${formatBytes(s.bytes)}`,
    `  retries      ${s.retries}`,
    // With why, so a night of bad data is visible in the summary, not only in the dead-letter file.
    `  dead letters ${s.deadLetters}${s.deadLetterReasons.length > 0 ? ` (${formatReasons(s.deadLetterReasons)})` : ''}`,
    // Only when it happened: a refusal is worth a look (the fast path was slower), not a line on every run.
    ...(s.nativeFallbacks > 0 ? [`  JS fallbacks ${s.nativeFallbacks} (a sink refused a file natively)`] : []),
    // Said in the summary, not only in the log: a table's columns changing is what downstream queries feel.
    ...(s.schemaChanges ?? []).map((c) => `  schema       ${c.sink}: ${c.changes.map(formatSchemaChange).join(', ')}`),
    ...checkLines(s.checks ?? []),
    // What the service billed: the same figures as runs.jsonl, webhooks and metrics (the run's ledger).
    ...(s.paidCalls > 0 || s.recordsCharged > 0 ? [`  paid         ${describePaid(s)}`] : []),
    `  duration     ${formatDuration(s.durationMs)}`,
    `  throughput   ${Math.round(s.records / Math.max(secs, 0.001)).toLocaleString('en-US')} records/s, ${formatBytes(s.bytes / Math.max(secs, 0.001))}/s`,
    ...s.outputs.map((o) => `  output       ${o}`),
    ...(s.run !== undefined ? [`  run          ${s.run}${s.shard !== undefined ? ` (shard ${s.shard})` : ''}`] : []),
  ];
  // Reasons and column names come from the data: each stays one line.
  return lines.map(printableLine).join('\n');
}

/** `checks 5 passed, 1 failed`, then a line per check that did not pass. */
function checkLines(checks: readonly CheckResult[]): string[] {
  if (checks.length === 0) return [];
  const passed = checks.filter((c) => c.passed).length;
  return [
    `  checks       ${passed} passed, ${checks.length - passed} failed`,
    ...checks.filter((c) => !c.passed).map((c) => `    ${c.name} on ${c.sink}: ${formatCheck(c)}`),
  ];
}
