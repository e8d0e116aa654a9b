/**
 * Bounds on what the network may hand a run: the answers sluice reads come from a service (or something standing in
 * its place) that can be broken or hostile, and none of them may cost unbounded memory, disk or time. Each bound is
 * a pipeline option (`limits:`, src/pipeline/limits-schema.ts) with a default generous enough for every real answer
 * we know of; the reasons for each default are beside it.
 *
 * Exceeding a bound fails the unit (or the call) with `LimitExceeded`, which names the option to raise; a single
 * record over `max_record_bytes` is dead-lettered instead, where the decoder can skip it (src/decode/).
 */
import { SluiceError, type RetryClassified } from './errors.js';

export interface Limits {
  /** A record (JSONL line, JSON array element, CSV record) larger than this is dead-lettered, never buffered. */
  maxRecordBytes: number;
  /** A JSON answer of a call (metadata, status, a crawl page…) larger than this fails the call. */
  maxAnswerBytes: number;
  /** Decompressed bytes of one unit's download (a snapshot part, a deep lookup download) at most. */
  maxUnitBytes: number;
  /** Decompressed bytes per compressed byte of a gzip body at most (after its first `INFLATE_FLOOR` bytes). */
  maxInflateRatio: number;
  /** A unit may hold this fraction more records than its source announced (snapshot part: batch_size). */
  recordsMargin: number;
  /** Wall-clock time one attempt at a unit may take, download to commit. */
  unitTimeoutMs: number;
  /** Wall-clock time one JSON call may take, request to the answer's last byte. */
  callTimeoutMs: number;
  /** After SIGINT/SIGTERM: the process exits within this, units in flight committing meanwhile if they can. */
  interruptGraceMs: number;
}

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

export const DEFAULT_LIMITS: Readonly<Limits> = {
  // The largest records we have seen are deep lookup rows and company profiles with long text, tens of KB; DuckDB's
  // JSON reader refuses objects over 16 MB by default. Parsing a 16 MiB line holds ~10× that in objects, so with a
  // few units in flight this keeps a hostile record far below the memory of a small machine.
  maxRecordBytes: 16 * MiB,
  // Deep lookup's `GET /request/{id}` carries every matched row inline (tens of thousands of rows of a few KB); all
  // other answers (metadata, status, a search page) are well under 10 MB. Read whole before parsing, so this is
  // also the most an answer can cost in memory (about 3× it while parsed).
  maxAnswerBytes: 256 * MiB,
  // The service sends at most 5 GB per download (docs/service.md §1.2); gzip'd JSONL of records inflates ~5–15×.
  // This allows a full 5 GB part of plain JSONL several times over; a part of that size compressed is bounded by
  // the ratio below rather than by this.
  maxUnitBytes: 64 * GiB,
  // gzip'd JSON records inflate 5–20× (the emulator's company profiles: ~8×; null-heavy rows up to ~40×); zlib's
  // maximum is ~1032×, which only a bomb (long runs of one byte) reaches.
  maxInflateRatio: 200,
  // Snapshot parts hold exactly batch_size records (the last fewer); the margin absorbs a service that counts a
  // little differently (records added while the part was cut) without letting a runaway part through.
  recordsMargin: 0.1,
  // A 5 GB part (the service's largest) at 3 Mbit/s — a slow link shared by 4 parts at once — takes ~3.7 h.
  unitTimeoutMs: 4 * 3600_000,
  // The slowest real answer waits up to 150 s for its headers (a search page, docs/service.md §5.6); the largest
  // (a deep lookup request's rows, up to max_answer_bytes) arrives well within 10 min on any working link.
  callTimeoutMs: 10 * 60_000,
  // Kubernetes sends SIGKILL 30 s after SIGTERM by default (terminationGracePeriodSeconds): exiting by 25 s leaves
  // time to record the run's outcome and release its locks ourselves, and most units in flight commit in 20 s.
  interruptGraceMs: 25_000,
};

/**
 * gzip bodies may inflate freely up to `ratio × INFLATE_FLOOR`: a stream's first kilobytes say little about its
 * ratio (a header and a dictionary), and a bomb needs far more than that to do harm.
 */
export const INFLATE_FLOOR = 64 * 1024;

/** The pipeline option that sets each limit, named in messages and hints. */
export const LIMIT_OPTIONS: Record<keyof Limits, string> = {
  maxRecordBytes: 'limits.max_record_bytes',
  maxAnswerBytes: 'limits.max_answer_bytes',
  maxUnitBytes: 'limits.max_unit_bytes',
  maxInflateRatio: 'limits.max_inflate_ratio',
  recordsMargin: 'limits.records_margin',
  unitTimeoutMs: 'limits.unit_timeout_s',
  callTimeoutMs: 'limits.call_timeout_s',
  interruptGraceMs: 'limits.interrupt_grace_s',
};

/**
 * An answer went past one of the run's limits. Not transient: the service would send the same answer again, so
 * the unit (or call) fails at once, and the message says which option allows more.
 */
export class LimitExceeded extends SluiceError implements RetryClassified {
  readonly transient = false;
  readonly limit: keyof Limits;

  constructor(limit: keyof Limits, message: string, opts: { hint?: string; cause?: unknown } = {}) {
    super(message, {
      hint:
        opts.hint ??
        `the answer looks broken or hostile; if it is genuine, raise ${LIMIT_OPTIONS[limit]} in the pipeline file`,
      cause: opts.cause,
    });
    this.name = 'LimitExceeded';
    this.limit = limit;
  }
}

/** Sizes as people write them: 16777216, "16MiB", "16 MB", "1.5GiB", "512KiB" (MB = 10^6, MiB = 2^20). */
export const BYTE_SIZE = /^(\d+(?:\.\d+)?)\s*(B|KB|KiB|MB|MiB|GB|GiB|TB|TiB)$/i;

const UNIT_BYTES: Record<string, number> = {
  b: 1,
  kb: 1e3,
  kib: 1024,
  mb: 1e6,
  mib: MiB,
  gb: 1e9,
  gib: GiB,
  tb: 1e12,
  tib: 1024 * GiB,
};

/** A byte size (number of bytes, or text matching `BYTE_SIZE`) in bytes; NaN when the text is not one. */
export function byteSize(v: number | string): number {
  if (typeof v === 'number') return v;
  const m = BYTE_SIZE.exec(v.trim());
  if (!m) return NaN;
  return Math.floor(Number(m[1]) * UNIT_BYTES[m[2]!.toLowerCase()]!);
}

/** `16 MiB`, `3.5 GiB`, `512 B`, in binary units: for messages, summaries and progress (bytes per second too). */
export function formatBytes(n: number): string {
  if (n < 1024) return `${Math.round(n)} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let i = -1;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${Number.isInteger(v) ? v : v.toFixed(1)} ${units[i]}`;
}

/**
 * What a decoder is told about the unit it reads, beside the bytes: the limits (defaults where absent), how many
 * records the source announced for it, and the signal that cancels the read (an interrupt's grace spent, the unit's
 * deadline passed).
 */
export interface DecodeBounds {
  limits?: Partial<Pick<Limits, 'maxRecordBytes' | 'maxUnitBytes' | 'maxInflateRatio' | 'recordsMargin'>>;
  /** The records the unit holds at most by the service's own account, and who said so (e.g. `batch_size`). */
  announcedRecords?: { count: number; by: string };
  signal?: AbortSignal;
}

/** `partial` over the defaults; a key given as undefined keeps its default. */
export function withDefaultLimits(partial: Partial<Limits> | undefined): Limits {
  const out = { ...DEFAULT_LIMITS };
  for (const [k, v] of Object.entries(partial ?? {}) as [keyof Limits, number | undefined][])
    if (v !== undefined) out[k] = v;
  return out;
}

/**
 * Of an interrupt's grace, the part units in flight may use to commit: all but the last 5 s (a fifth of it when
 * shorter), which the run needs to close its sinks, record its outcome and release its locks.
 */
export function unitGraceMs(graceMs: number): number {
  return graceMs - Math.min(5000, graceMs / 5);
}

/**
 * The grace of a pipeline's `limits.interrupt_grace_s` in ms (the default when unset). Here rather than beside the
 * schema: the CLI needs it before anything of the pipeline layer is loaded.
 */
export function interruptGraceMs(limits: { interrupt_grace_s?: number | undefined } | undefined): number {
  const s = limits?.interrupt_grace_s;
  return s === undefined ? DEFAULT_LIMITS.interruptGraceMs : Math.round(s * 1000);
}
