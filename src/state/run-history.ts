/**
 * The run history: one JSON line per event in `<state_dir>/runs.jsonl`, appended with fsync so it survives what the
 * run does not. An attempt (one invocation of `sluice run`) writes a `running` line when it starts and its outcome
 * when it ends; a reader keeps the last line of each attempt. An attempt killed with -9 (or by a power cut) leaves
 * its `running` line: the next attempt, holding the pipeline's lock and so sure nobody is running, marks it
 * `crashed`. Before that, a reader judges the process a `running` line names as the run lock judges its holder
 * (process-identity.ts: pid, start time, boot, pid namespace): one gone from this host reads as `crashed` at once.
 *
 * A run keeps its id across the attempts that resume it (run-state.ts); `attempt` counts them. Each attempt's line
 * says what that attempt paid the service for (its lines of the run's ledger, paid-ledger.ts); a crashed attempt's
 * are written on the line that marks it crashed, so the lines of a run add up to its bill.
 */
import { open } from 'node:fs/promises';
import path from 'node:path';
import { EXIT_CODES, InterruptedError, SluiceError } from '../core/errors.js';
import { PRIVATE_FILE } from '../core/private-files.js';
import type { BackfillWindow } from '../core/types.js';
import { redact } from '../core/redact.js';
import type { PaidFigures, PaidJobRecord, PaidLine } from '../core/paid-work.js';
import { errorText } from '../core/error-text.js';
import type { SinkSchemaChanges } from '../core/types.js';
import type { CheckResult } from '../observe/events.js';
import { identityOf, judgeHolder, selfIdentity } from './process-identity.js';
import { readTextIfPresent } from '../core/json-file.js';

export type { PaidJobRecord, PaidLine } from '../core/paid-work.js';

export type RunStatus = 'running' | 'succeeded' | 'failed' | 'interrupted' | 'crashed';

export interface SinkOutcome {
  /** `sink.describe()`. */
  sink: string;
  /** Units this attempt committed into the sink. */
  committedUnits: number;
  /** Their records (absent in lines of earlier versions). */
  records?: number;
}

export interface RunRecord {
  /** The run id (kept by a resumed run; sinks see it in unit ids and lineage columns). */
  run: string;
  /** 1 for the attempt that started the run, 2 for the first resume… */
  attempt: number;
  pipeline: string;
  status: RunStatus;
  /** The error's first line, for a run that did not succeed. */
  cause?: string;
  exitCode?: number;
  /** ISO 8601. */
  startedAt: string;
  endedAt?: string;
  resumed: boolean;
  pid: number;
  host: string;
  /** Who the process was beyond its pid (process-identity.ts), so a reader can tell it is gone. */
  boot?: string;
  pidns?: string;
  start?: string;
  command?: string;
  /** A backfill (`sluice run --from`), with the window it loaded; absent: a nightly run. */
  kind?: 'backfill';
  window?: BackfillWindow;
  units?: { committed: number; skipped: number; failed: number; total: number };
  /** Records this attempt committed (summary.ts `CommittedRecords`). */
  records?: number;
  /** Records read, tries that failed and were read again included (absent in lines of earlier versions). */
  recordsRead?: number;
  bytes?: number;
  retries?: number;
  deadLetters?: number;
  /** The most frequent reasons of this run's dead letters. */
  deadLetterReasons?: { reason: string; count: number }[];
  /** Paid jobs the run started (a filter job's snapshot, a deep lookup request), every attempt's, from its ledger. */
  paidJobs?: PaidJobRecord[];
  /**
   * Calls the service billed during this attempt, every kind together (its ledger: core/paid-work.ts): the attempts
   * of a run add up to what it paid for. Absent in lines of earlier versions.
   */
  paidCalls?: number;
  /**
   * Records the service charged during this attempt (a filter job's snapshot, a deep lookup's matched records): the
   * attempts of a run add up to what it was charged. 0 for a run that paid for no records (absent in lines of
   * earlier versions).
   */
  recordsCharged?: number;
  /** This attempt's lines of the ledger: each kind of billed call, what for, how many, retried, wasted, records. */
  paid?: PaidLine[];
  sinks?: SinkOutcome[];
  /** Columns the attempt added to or widened in each sink's table / dataset (only sinks that changed something). */
  schemaChanges?: SinkSchemaChanges[];
  /** Results of the sinks' `checks:` after the load. */
  checks?: CheckResult[];
  /** What the attempt warned about (run-warnings.ts), e.g. a cursor value from the future it did not take. */
  warnings?: string[];
}

export function runHistoryFile(stateDir: string): string {
  return path.join(stateDir, 'runs.jsonl');
}

const CRASHED_CAUSE = 'the process ended without recording an outcome (killed, or the machine stopped)';

/**
 * Every attempt's last line, oldest first. Lines cut short by a crash mid-write are skipped. A `running` attempt
 * whose process is gone from this host is `crashed` (`asWritten`: as the file says, for the writer).
 */
export async function readRunHistory(file: string, opts: { asWritten?: boolean } = {}): Promise<RunRecord[]> {
  const text = await readTextIfPresent(file);
  if (text === undefined) return [];
  const byAttempt = new Map<string, RunRecord>();
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    let r: RunRecord | null;
    try {
      r = JSON.parse(line) as RunRecord | null;
    } catch {
      continue;
    }
    // A line cut short by a crash or edited by hand (`null`, a number) is skipped like one that does not parse.
    if (typeof r !== 'object' || r === null || typeof r.run !== 'string' || typeof r.attempt !== 'number') continue;
    const key = `${r.run}#${r.attempt}`;
    // Re-inserted so the order is the order of each attempt's first line (its start).
    const first = byAttempt.get(key);
    byAttempt.set(key, first ? { ...first, ...r } : r);
  }
  const records = [...byAttempt.values()];
  return opts.asWritten ? records : records.map(judged);
}

/** A `running` attempt whose process is certainly gone (same host) as `crashed`; any other record as it is. */
function judged(r: RunRecord): RunRecord {
  if (r.status !== 'running') return r;
  const id = identityOf(r as unknown as Record<string, unknown>);
  return id && judgeHolder(id) === 'dead' ? { ...r, status: 'crashed', cause: CRASHED_CAUSE } : r;
}

/** Appends lines durably: each resolves once the line is on disk. */
export class RunHistory {
  constructor(readonly file: string) {}

  /**
   * Marks attempts left `running` (their process died: the caller holds the lock) as crashed, then records this
   * attempt's start, numbered after the earlier attempts of the same run.
   */
  async start(
    rec: Omit<RunRecord, 'attempt' | 'status' | 'pid' | 'host' | 'startedAt'> & { startedAt?: string },
    /** What a crashed attempt paid for, as the state it left says (its own line could not say it). */
    paidBy: (crashed: RunRecord) => PaidFigures | undefined = () => undefined,
  ): Promise<RunRecord> {
    const history = await readRunHistory(this.file, { asWritten: true });
    const now = new Date().toISOString();
    const lines: RunRecord[] = [];
    for (const r of history.filter((h) => h.status === 'running'))
      lines.push({ ...r, status: 'crashed', cause: CRASHED_CAUSE, ...paidBy(r) });
    const record: RunRecord = {
      ...rec,
      attempt: Math.max(0, ...history.filter((h) => h.run === rec.run).map((h) => h.attempt)) + 1,
      status: 'running',
      startedAt: rec.startedAt ?? now,
      ...selfIdentity(),
    };
    lines.push(record);
    await this.append(lines);
    return record;
  }

  async end(record: RunRecord): Promise<void> {
    await this.append([{ ...record, endedAt: record.endedAt ?? new Date().toISOString() }]);
  }

  private async append(records: readonly RunRecord[]): Promise<void> {
    const fh = await open(this.file, 'a', PRIVATE_FILE);
    try {
      await fh.write(redact(records.map((r) => JSON.stringify(r) + '\n').join('')));
      await fh.sync();
    } finally {
      await fh.close();
    }
  }
}

/** How an attempt ended, from what it threw (undefined: it succeeded). */
export function outcomeOf(failure: unknown): Pick<RunRecord, 'status' | 'cause' | 'exitCode'> {
  if (failure === undefined) return { status: 'succeeded', exitCode: EXIT_CODES.success };
  const exitCode = failure instanceof SluiceError ? failure.exitCode : EXIT_CODES.failure;
  return {
    status: failure instanceof InterruptedError ? 'interrupted' : 'failed',
    cause: errorText(failure).split('\n')[0]!,
    exitCode,
  };
}
