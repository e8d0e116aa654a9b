/** What every decoder needs besides its bytes: where records go, and where rejected ones go. */
import { LIMIT_OPTIONS, LimitExceeded, formatBytes } from '../core/limits.js';
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
  /** A record over this many bytes is dead-lettered without being buffered (or fails the unit where it cannot be). */
  maxRecordBytes: number;
  /** The unit fails once it held more records than this (the source's announcement plus the margin). */
  maxRecords?: { limit: number; announced: number; by: string; margin: number };
}

/** Bytes of an over-long record kept for its dead letter: enough to recognise it, never the record. */
const OVERSIZED_HEAD = 1024;

/**
 * A record too large to hold, being skipped: its first bytes (for the dead letter) and how many bytes it had so
 * far. Decoders keep one of these instead of the record's bytes until they find its end.
 */
export class Oversized {
  readonly head: string;
  bytes: number;

  /** `first`: the record's first bytes as they came (pieces of chunks), of which `OVERSIZED_HEAD` are kept. */
  constructor(
    readonly offset: number,
    first: Buffer | readonly Buffer[],
    bytes: number,
  ) {
    this.head = headOf(Buffer.isBuffer(first) ? [first] : first);
    this.bytes = bytes;
  }

  /** Dead-letters the skipped record, `what` being e.g. `line`, `array element`, `CSV record`. */
  reject(ctx: DecodeContext, what: string, ended = true): void {
    rejectOversized(ctx, this.offset, this.bytes, what, this.head, ended);
  }
}

function headOf(pieces: readonly Buffer[]): string {
  const kept: Buffer[] = [];
  let n = 0;
  for (const p of pieces) {
    if (n >= OVERSIZED_HEAD) break;
    kept.push(p.subarray(0, OVERSIZED_HEAD - n));
    n += kept[kept.length - 1]!.length;
  }
  // A multi-byte character cut at the end decodes as U+FFFD: harmless in a text that says it was cut.
  return Buffer.concat(kept).toString('utf8');
}

/** A record over `maxRecordBytes`, its `head` kept for the dead letter (marked as cut). */
export function rejectOversized(
  ctx: DecodeContext,
  offset: number,
  bytes: number,
  what: string,
  head: string,
  ended = true,
): void {
  const size = ended ? formatBytes(bytes) : `${formatBytes(bytes)} or more: the input ends inside it`;
  rejectRecord(
    ctx,
    offset,
    `${what} (${size}) is over the record size limit of ${formatBytes(ctx.maxRecordBytes)} (${LIMIT_OPTIONS.maxRecordBytes}); skipped unread, its first bytes kept`,
    head.length < bytes ? `${head.slice(0, OVERSIZED_HEAD)}…` : head,
  );
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
  /** Records added so far, against `DecodeContext.maxRecords`. */
  private records = 0;

  constructor(private readonly ctx: DecodeContext) {
    this.size = ctx.batchSize;
    this.maxBytes = ctx.batchBytes;
  }

  /** `bytes`: the record's size in the input. */
  add(row: Row, bytes: number): void {
    if (++this.records > (this.ctx.maxRecords?.limit ?? Infinity)) throw tooManyRecords(this.ctx);
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
 * A decoder that is fed chunks and fills a `Batcher` (the CSV parser, the JSON array scanner): the batches it fills
 * are yielded after each chunk, the rest once the input ends, so both decoders stream the same way.
 */
export async function* batchesOf(
  decoder: { readonly out: Batcher; feed(chunk: Buffer): void; end(): void },
  chunks: AsyncIterable<Buffer>,
): AsyncGenerator<Batch> {
  for await (const chunk of chunks) {
    decoder.feed(chunk);
    for (const b of decoder.out.take()) yield b;
  }
  decoder.end();
  for (const b of decoder.out.rest()) yield b;
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

/** More records than the source announced, past the margin: the part is not what was asked for. */
export function tooManyRecords(ctx: DecodeContext): LimitExceeded {
  const m = ctx.maxRecords!;
  return new LimitExceeded(
    'recordsMargin',
    `${ctx.unit}: more than ${m.limit} records, where ${m.by} says ${m.announced} (${LIMIT_OPTIONS.recordsMargin}: ${Math.round(m.margin * 100)}% more allowed); nothing of the unit was committed`,
    {
      hint:
        'the service sent more records than it said the unit holds: run again later; if the service really counts ' +
        `differently, raise ${LIMIT_OPTIONS.recordsMargin}`,
    },
  );
}
