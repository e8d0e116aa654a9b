/** What every decoder needs besides its bytes: where records go, and where rejected ones go. */
import { redact } from '../core/redact.js';
import type { Batch, DeadLetterFn, Row } from '../core/types.js';

/**
 * Dead letters carry the offending input whole up to 1 MiB, bounded for a runaway record: a letter is replayed from
 * this text after the user fixes it, so cutting an ordinary record short would make it impossible to replay.
 */
const RAW_LIMIT = 1 << 20;

export interface DecodeContext {
  unit: string;
  deadLetter: DeadLetterFn;
  /** A batch closes at this many records... */
  batchSize: number;
  /** ...or once its records took this many input bytes, whichever comes first. */
  batchBytes: number;
}

export function rejectRecord(ctx: DecodeContext, offset: number, reason: string, raw: string): void {
  ctx.deadLetter({
    unit: ctx.unit,
    offset,
    stage: 'decode',
    reason,
    raw: raw.length > RAW_LIMIT ? `${raw.slice(0, RAW_LIMIT)}…` : raw,
  });
}

/** Plain objects are records; arrays, strings, numbers, booleans and null are not. */
export function isRecord(v: unknown): v is Row {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function kindOf(v: unknown): string {
  return v === null ? 'null' : Array.isArray(v) ? 'an array' : `a ${typeof v}`;
}

/**
 * Collects records into batches of `batchSize` records or `batchBytes` input bytes, whichever fills first (the
 * last batch shorter). Decoders add a chunk's records, then hand the full batches over, so at most one input
 * chunk's records (64 KiB of input at most, see `decompressed`) wait here.
 */
export class Batcher {
  private current: Row[] = [];
  private bytes = 0;
  private full: Batch[] = [];
  private readonly size: number;
  private readonly maxBytes: number;

  constructor(ctx: DecodeContext) {
    this.size = ctx.batchSize;
    this.maxBytes = ctx.batchBytes;
  }

  /** `bytes`: the record's size in the input. */
  add(row: Row, bytes: number): void {
    this.current.push(row);
    this.bytes += bytes;
    if (this.current.length >= this.size || this.bytes >= this.maxBytes) {
      this.full.push(this.current);
      this.current = [];
      this.bytes = 0;
    }
  }

  /** Full batches collected since the last call. */
  take(): Batch[] {
    const out = this.full;
    if (out.length > 0) this.full = [];
    return out;
  }

  /** Everything left, at the end of the input. */
  rest(): Batch[] {
    const out = this.full;
    this.full = [];
    if (this.current.length > 0) out.push(this.current);
    this.current = [];
    return out;
  }
}

/**
 * JSON.parse's complaint about `text`, safe to show. V8 quotes a window of the input in its message, which can cut a
 * secret in the middle where `redact` (whole secrets only) no longer sees it: the text is redacted first and parsed
 * again, so the window quotes the redacted text.
 */
export function jsonFailure(text: string, err: unknown): string {
  const safe = redact(text);
  if (safe === text) return (err as Error).message;
  try {
    JSON.parse(safe);
  } catch (e) {
    return (e as Error).message;
  }
  return 'not valid JSON';
}
