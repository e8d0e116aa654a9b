/**
 * The run history as a table for people: one line per attempt, newest first, in human units, with what the attempt
 * paid the service for (PAID: its billed calls and the records charged, from the run's ledger); below a line, what
 * only some runs have (why it did not succeed, what it paid for, the paid jobs it started, what each sink committed).
 */
import { describeWindow } from '../core/checkpoint.js';
import { describePaid } from '../core/paid-work.js';
import { printableLine } from '../core/printable.js';
import type { RunRecord, StateChange } from '../operations/history.js';
import { formatBytes } from '../core/limits.js';
import { formatDuration } from '../core/duration.js';
import { formatSchemaChange } from '../operations/summary.js';

const HEADERS = ['RUN', 'STARTED', 'TOOK', 'STATUS', 'UNITS', 'RECORDS', 'BYTES', 'RETRIES', 'DEAD', 'PAID'] as const;

/** A line of the history: an attempt, or a change made by hand to the state (`sluice state set/reset/drop`). */
export type HistoryEntry = RunRecord | StateChange;

export function isStateChange(e: HistoryEntry): e is StateChange {
  // A run's attempt may have a kind too (a backfill): a change made by hand is the entry without an attempt.
  return 'kind' in e && typeof e.kind === 'string' && !('attempt' in e);
}

/** When the entry happened, for ordering attempts and changes together. */
export function entryTime(e: HistoryEntry): string {
  return isStateChange(e) ? e.at : e.startedAt;
}

export function formatRuns(runs: readonly HistoryEntry[]): string {
  const rows = runs.map((r) => (isStateChange(r) ? changeCells(r) : cells(r)));
  const widths = HEADERS.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  // Numbers right-aligned, text left-aligned.
  const right = new Set([4, 5, 6, 7, 8, 9]);
  const line = (cols: readonly string[]): string =>
    cols
      .map((c, i) => (right.has(i) ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  const out = [line(HEADERS)];
  runs.forEach((r, k) => {
    out.push(line(rows[k]!));
    // A cause or a reason may quote data or the service's answer: each stays one line.
    for (const d of isStateChange(r) ? [`${r.what} (by ${r.by})`] : details(r)) out.push(`    ${printableLine(d)}`);
  });
  return out.join('\n');
}

function cells(r: RunRecord): string[] {
  const took =
    r.endedAt !== undefined
      ? formatDuration(Date.parse(r.endedAt) - Date.parse(r.startedAt))
      : r.status === 'running'
        ? '…'
        : '?';
  const u = r.units;
  return [
    r.attempt > 1 ? `${r.run} #${r.attempt}` : r.run,
    localTime(r.startedAt),
    took,
    r.resumed ? `${r.status} (resumed)` : r.status,
    u ? `${u.committed + u.skipped}/${u.total}` : '-',
    r.records !== undefined ? r.records.toLocaleString('en-US') : '-',
    r.bytes !== undefined ? formatBytes(r.bytes) : '-',
    r.retries !== undefined ? String(r.retries) : '-',
    r.deadLetters !== undefined ? String(r.deadLetters) : '-',
    paidCell(r),
  ];
}

/** `14 calls`, `1 call, 15 rec`: what the attempt paid for; `-` in lines of versions before the ledger. */
function paidCell(r: RunRecord): string {
  if (r.paidCalls === undefined) return '-';
  const calls = `${r.paidCalls} call${r.paidCalls === 1 ? '' : 's'}`;
  const records = r.recordsCharged ?? 0;
  return records > 0 ? `${calls}, ${records.toLocaleString('en-US')} rec` : calls;
}

function changeCells(c: StateChange): string[] {
  return [c.kind, localTime(c.at), '-', 'done', '-', '-', '-', '-', '-', '-'];
}

function details(r: RunRecord): string[] {
  const out: string[] = [];
  if (r.kind === 'backfill' && r.window) out.push(`backfill: ${describeWindow(r.window)}`);
  if (r.cause !== undefined) out.push(`cause: ${r.cause}${r.exitCode !== undefined ? ` (exit ${r.exitCode})` : ''}`);
  // RECORDS is what the attempt committed; what it read beyond that was read by tries that failed.
  if (r.recordsRead !== undefined && r.records !== undefined && r.recordsRead > r.records)
    out.push(
      `records: ${r.records.toLocaleString('en-US')} committed, ${r.recordsRead.toLocaleString('en-US')} read ` +
        `(${(r.recordsRead - r.records).toLocaleString('en-US')} in tries that failed or were not committed)`,
    );
  if (r.units && (r.units.skipped > 0 || r.units.failed > 0))
    out.push(`units: ${r.units.committed} committed, ${r.units.skipped} already committed, ${r.units.failed} failed`);
  if (r.deadLetterReasons && r.deadLetterReasons.length > 0)
    out.push(`dead letters: ${r.deadLetterReasons.map((d) => `${d.reason} ×${d.count}`).join('; ')}`);
  if (r.paidCalls !== undefined && (r.paidCalls > 0 || (r.recordsCharged ?? 0) > 0))
    out.push(
      `paid: ${describePaid({ paidCalls: r.paidCalls, recordsCharged: r.recordsCharged ?? 0, paid: r.paid ?? [] })}`,
    );
  for (const j of r.paidJobs ?? [])
    out.push(`paid job: ${j.kind} ${j.id}${j.started_at ? ` started ${localTime(j.started_at)}` : ''}`);
  for (const s of r.sinks ?? [])
    out.push(
      `sink: ${s.sink}: ${s.committedUnits} unit(s)${s.records !== undefined ? `, ${s.records.toLocaleString('en-US')} records` : ''} committed`,
    );
  for (const c of r.schemaChanges ?? []) out.push(`schema: ${c.sink}: ${c.changes.map(formatSchemaChange).join(', ')}`);
  for (const w of r.warnings ?? []) out.push(`warning: ${w}`);
  return out;
}

/** `2026-11-23 20:31:58`, in the machine's time zone (where cron runs). */
function localTime(iso: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const p = (n: number): string => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}
