/**
 * The run's ledger of paid work (core/paid-work.ts), kept in the run's state (`run:paid` in state.json). The state
 * is kept across the attempts of a run (run-state.ts), so a resumed run adds to its ledger, and each line names the
 * attempt that paid it: an attempt's runs.jsonl line reports its own lines, a killed attempt's are reported on its
 * `crashed` line by the attempt after it (run-history.ts), and so the lines of a run add up to its bill, each call
 * counted once. Every change is on disk before the source that reported it goes on (the state's writes are
 * coalesced: calls answered together share one write).
 *
 * A call with a `key` (a page's unit id) stays open until its unit committed (`settled`); billed again while open, it
 * was paid twice — a retry. Open keys are few (the pages in flight) and saved with the ledger, so a page billed by a
 * killed attempt and read again by its resume counts as retried too.
 */
import type { PaidCall, PaidFigures, PaidJobRecord, PaidKind, PaidLine, PaidWork } from '../core/paid-work.js';
import { NO_PAID_WORK, paidFigures } from '../core/paid-work.js';
import type { StateStore } from '../core/types.js';

/** The run state key of the ledger. */
export const PAID_LEDGER_KEY = 'run:paid';
/** Where sluice before the ledger listed a run's paid jobs: read once, when such a run is resumed. */
const OLD_PAID_JOBS_KEY = 'run:paid_jobs';

/** A ledger line as the state keeps it: with the attempt that paid it. */
interface StoredLine extends PaidLine {
  attempt: number;
  started_at?: string;
}

interface StoredLedger {
  lines: StoredLine[];
  /** Keys of calls billed whose units have not committed yet. */
  open: string[];
}

export class PaidLedger implements PaidWork {
  private readonly lines: StoredLine[];
  private readonly open: Set<string>;

  private constructor(
    private readonly state: StateStore,
    /** The attempt of the run whose calls are recorded (runs.jsonl `attempt`). */
    readonly attempt: number,
    stored: StoredLedger,
  ) {
    this.lines = stored.lines;
    this.open = new Set(stored.open);
  }

  /** The run's ledger as its state holds it; what `attempt` pays for is added to it. */
  static open(state: StateStore, attempt: number): PaidLedger {
    return new PaidLedger(state, attempt, storedLedger(state.get(PAID_LEDGER_KEY)) ?? fromOldJobs(state));
  }

  async paid(call: PaidCall): Promise<void> {
    // A job is paid once: started again (a lost answer adopted after a kill), it is the same job.
    if (call.job !== undefined && this.lines.some((l) => l.job === call.job && l.calls > 0)) return;
    const retried = call.key !== undefined && this.open.has(call.key);
    if (call.key !== undefined) this.open.add(call.key);
    const line = this.line(call.kind, call.for, call.job);
    line.calls++;
    if (retried) line.retried++;
    if (call.startedAt !== undefined) line.started_at ??= call.startedAt;
    await this.save();
  }

  async wasted(call: Pick<PaidCall, 'kind' | 'for'>): Promise<void> {
    this.line(call.kind, call.for).wasted++;
    await this.save();
  }

  async charged(job: string, records: number): Promise<void> {
    const started = this.lines.find((l) => l.job === job && l.calls > 0);
    // A job of another run (a configured snapshot id, a prepared job's shard) is not this run's bill.
    if (started === undefined || this.lines.some((l) => l.job === job && l.records !== undefined)) return;
    this.line(started.kind, started.for, job).records = records;
    await this.save();
  }

  settled(key: string): void {
    this.open.delete(key);
  }

  /** What `attempt` (default: this one) paid for. */
  figures(attempt = this.attempt): PaidFigures {
    return figuresOfAttempt(this.lines, attempt);
  }

  /** The run's paid jobs, every attempt's, with the records charged for each once known (runs.jsonl `paidJobs`). */
  jobs(): PaidJobRecord[] {
    const jobs: PaidJobRecord[] = [];
    for (const l of this.lines) {
      if (l.job === undefined || l.calls === 0 || jobs.some((j) => j.id === l.job)) continue;
      const charged = this.lines.find((c) => c.job === l.job && c.records !== undefined)?.records;
      jobs.push({
        kind: JOB_KINDS[l.kind] ?? l.kind,
        id: l.job,
        ...(l.started_at !== undefined && { started_at: l.started_at }),
        ...(charged !== undefined && { recordsCharged: charged }),
      });
    }
    return jobs;
  }

  /** The line of this attempt for `kind`, `what` and `job`, made on first use. */
  private line(kind: PaidKind, what: string, job?: string): StoredLine {
    let line = this.lines.find((l) => l.attempt === this.attempt && l.kind === kind && l.for === what && l.job === job);
    if (line === undefined) {
      line = { attempt: this.attempt, kind, for: what, calls: 0, retried: 0, wasted: 0, ...(job && { job }) };
      this.lines.push(line);
    }
    return line;
  }

  private save(): Promise<void> {
    const stored: StoredLedger = { lines: this.lines.map((l) => ({ ...l })), open: [...this.open] };
    return this.state.set(PAID_LEDGER_KEY, stored);
  }
}

/**
 * What attempt `attempt` paid for, as a ledger value of the state holds it (`state.get(PAID_LEDGER_KEY)`): for the
 * `crashed` line of an attempt that was killed before it could report itself.
 */
export function paidByAttempt(value: unknown, attempt: number): PaidFigures {
  const stored = storedLedger(value);
  return stored === undefined ? NO_PAID_WORK : figuresOfAttempt(stored.lines, attempt);
}

function figuresOfAttempt(lines: readonly StoredLine[], attempt: number): PaidFigures {
  return paidFigures(lines.filter((l) => l.attempt === attempt).map(({ attempt: _a, started_at: _s, ...l }) => l));
}

/** The job kinds runs.jsonl has always named (`paidJobs[].kind`). */
const JOB_KINDS: Partial<Record<PaidKind, string>> = { filter: 'filter', trigger: 'deep_lookup' };

/** The ledger in the state, or undefined when there is none (or it is not one: a hand edit). */
function storedLedger(value: unknown): StoredLedger | undefined {
  const v = value as Partial<StoredLedger> | null | undefined;
  if (v === null || typeof v !== 'object' || !Array.isArray(v.lines)) return undefined;
  const lines = v.lines.filter(
    (l): l is StoredLine =>
      l !== null && typeof l === 'object' && typeof l.kind === 'string' && typeof l.calls === 'number',
  );
  return {
    lines: lines.map((l) => ({ ...l, retried: l.retried ?? 0, wasted: l.wasted ?? 0, attempt: l.attempt ?? 0 })),
    open: Array.isArray(v.open) ? v.open.filter((k): k is string => typeof k === 'string') : [],
  };
}

/**
 * A run an earlier sluice started lists its paid jobs only (`run:paid_jobs`): they become lines of attempt 0, which
 * no attempt reports again (its own line did), so their charge is still noted once, and the jobs still listed.
 */
function fromOldJobs(state: StateStore): StoredLedger {
  const jobs =
    state.get<{ kind?: string; id?: string; started_at?: string; records_charged?: number }[]>(OLD_PAID_JOBS_KEY);
  const lines: StoredLine[] = [];
  for (const j of Array.isArray(jobs) ? jobs : []) {
    if (typeof j?.id !== 'string') continue;
    const kind: PaidKind = j.kind === 'deep_lookup' ? 'trigger' : 'filter';
    lines.push({
      attempt: 0,
      kind,
      for: kind === 'filter' ? 'filter job' : 'deep lookup',
      calls: 1,
      retried: 0,
      wasted: 0,
      job: j.id,
      ...(j.started_at !== undefined && { started_at: j.started_at }),
      ...(j.records_charged !== undefined && { records: j.records_charged }),
    });
  }
  return { lines, open: [] };
}
