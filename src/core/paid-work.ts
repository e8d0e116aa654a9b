/**
 * The ledger of paid work: every call the service may bill, recorded once, by the source that made it, as the
 * service answers it — before the answer is used, so a run killed afterwards cannot lose it. A line of the ledger is
 * one kind of call for one purpose in one attempt of the run: how many were billed, how many of them paid again for
 * what this run had paid for before (a page read again after a failure), how many were answered for nothing (a
 * repeated page, a page not asked for), the records the service charged, the job the call started.
 *
 * Written through `PaidWork` (SourceContext.paid), kept in the run's state (state/paid-ledger.ts: a resumed run adds
 * to it, so a killed night is counted once), and read by everything that tells what a run paid: runs.jsonl, `sluice
 * runs`, the run's summary, webhooks and metrics (`RunTotals`). In core because all of them read the same record.
 */

/**
 * What the service bills, named as the emulator's counters name it (`GET /_emulator/counters`): a filter job,
 * a deep lookup's trigger and each enrichment, a page through `POST /request`, and the zone changes.
 */
export type PaidKind = 'filter' | 'trigger' | 'enrich' | 'request' | 'zone_create' | 'ip_refresh' | 'domain_perm';

/** The kinds in the order the ledger lists them. */
export const PAID_KINDS: readonly PaidKind[] = [
  'filter',
  'trigger',
  'enrich',
  'request',
  'zone_create',
  'ip_refresh',
  'domain_perm',
];

/** One line of what an attempt paid for: the same shape in runs.jsonl, the summary, webhooks and `RunTotals`. */
export interface PaidLine {
  kind: PaidKind;
  /** What the calls were for: `review page`, `from_serp search page`, `snapshot of gd_…`, `enrich column x`. */
  for: string;
  /** Calls the service billed. */
  calls: number;
  /** Of them, calls that paid again for what the run had paid for before (a page read again after a failure). */
  retried: number;
  /** Of them, calls answered for nothing: a page the service repeated, or one that was not the page asked for. */
  wasted: number;
  /** Records the service charged (a filter job's snapshot once ready, a deep lookup's matched records). */
  records?: number;
  /** The job the call started (a snapshot id, a deep lookup request id). */
  job?: string;
}

/** A billed call, as the source that made it records it. */
export interface PaidCall {
  kind: PaidKind;
  /** What it was for (the line it is counted on). */
  for: string;
  /**
   * What identifies the call within the run (a page's unit id): a call billed again under a key not yet settled
   * counts as retried. Absent: never retried (a job is started once per run).
   */
  key?: string;
  /** The job the call started. */
  job?: string;
  /** When the job started (ISO 8601). */
  startedAt?: string;
}

/** Where a source records what it paid for (`SourceContext.paid`). Every method resolves once it is on disk. */
export interface PaidWork {
  /** A billed call was answered. Recorded before the caller uses the answer. */
  paid(call: PaidCall): Promise<void>;
  /** A billed call's answer was not used: the page repeated one already answered, or was not the page asked for. */
  wasted(call: Pick<PaidCall, 'kind' | 'for'>): Promise<void>;
  /** A job of this run was charged `records` (noted once per job; a job of another run is not this run's bill). */
  charged(job: string, records: number): Promise<void>;
  /** What the call under `key` paid for is kept (its unit committed): billed again, it is not a retry. Not awaited. */
  settled(key: string): void;
}

/** A paid job of the run, as runs.jsonl's `paidJobs` and `sluice prepare` list it. */
export interface PaidJobRecord {
  kind: string;
  id: string;
  started_at?: string;
  /** Records the service charged for it, once known. */
  recordsCharged?: number;
}

/** An attempt's figures, as every reader shows them: the total calls, the records charged, and the lines. */
export interface PaidFigures {
  /** Billed calls of every kind. */
  paidCalls: number;
  recordsCharged: number;
  paid: PaidLine[];
}

/** No paid work: an attempt that paid for nothing, or one refused before its ledger was open. */
export const NO_PAID_WORK: PaidFigures = Object.freeze({ paidCalls: 0, recordsCharged: 0, paid: [] });

/** The figures of some ledger lines: their calls and records added up. */
export function paidFigures(lines: readonly PaidLine[]): PaidFigures {
  let paidCalls = 0;
  let recordsCharged = 0;
  for (const l of lines) {
    paidCalls += l.calls;
    recordsCharged += l.records ?? 0;
  }
  return { paidCalls, recordsCharged, paid: lines.map((l) => ({ ...l })) };
}

/** `14 calls (review page ×10, from_serp search page ×4; 1 wasted), 15 records charged`: one line for people. */
export function describePaid(f: PaidFigures): string {
  if (f.paidCalls === 0 && f.recordsCharged === 0) return 'nothing';
  const byFor = new Map<string, number>();
  let retried = 0;
  let wasted = 0;
  for (const l of f.paid) {
    if (l.calls > 0) byFor.set(l.for, (byFor.get(l.for) ?? 0) + l.calls);
    retried += l.retried;
    wasted += l.wasted;
  }
  const parts = [...byFor].map(([what, n]) => `${what} ×${n}`);
  const extra = [retried > 0 && `${retried} retried`, wasted > 0 && `${wasted} wasted`].filter(Boolean);
  const detail = parts.length > 0 ? ` (${parts.join(', ')}${extra.length > 0 ? `; ${extra.join(', ')}` : ''})` : '';
  const calls = `${f.paidCalls} call${f.paidCalls === 1 ? '' : 's'}${detail}`;
  return f.recordsCharged > 0 ? `${calls}, ${f.recordsCharged.toLocaleString('en-US')} records charged` : calls;
}
