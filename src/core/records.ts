/**
 * What flows through a pipeline — records in batches, units of work, dead letters — and the logger and counters
 * every stage is handed. The bottom of the contracts (types.ts): every other contract is written in these terms, so
 * they sit in a file that imports nothing.
 */
/** One record: a plain JSON-compatible object. */
export type Row = Record<string, unknown>;
/** Thousands of records at a time. */
export type Batch = Row[];

/**
 * A unit of work with a stable id: snapshot part k, SERP query q page p, reviews fid f page p, a deep-lookup
 * download. Sinks commit a unit's records together with the unit's id, which is what makes reruns exactly-once.
 *
 * An immutable value: nobody writes into a unit once a source planned it. What reading the unit learns (its cursor
 * checkpoint) is handed to the sink with the rows (`UnitCommit`), never written into the unit for a sink to read
 * later, so no sink depends on when it reads a field of the unit.
 */
export interface WorkUnit {
  /** Stable across runs of the same pipeline: e.g. `snapshot:snap_x:part:3`, `serp:<query>:start:20`. */
  readonly id: string;
  /** What the unit reads; sources put whatever they need here (JSON-serialisable). */
  readonly params: Readonly<Record<string, unknown>>;
  /** For `plan` and progress; undefined when unknown. */
  readonly estimatedRecords?: number;
}

/**
 * What the engine hands a sink beside a unit's rows, to commit with them (`Sink.writeUnit`, `writeUnitFile`).
 */
export interface UnitCommit {
  /**
   * What the unit advanced the source's cursor to (incremental loads; undefined: nothing), JSON-serialisable. The
   * sink calls it when it commits — after it drained the unit's batches — and stores the value in the same
   * transaction / manifest swap as the rows, handing it back through `committedCheckpoints()`. Called before the
   * batches were drained it throws `CheckpointNotFinal` (core/checkpoint.ts): the value depends on rows not yet
   * read, and an early read would silently store nothing.
   */
  checkpoint(): unknown;
}

/** A record that could not be decoded or transformed. It goes to the dead-letter file, never silently away. */
export interface DeadLetter {
  unit: string;
  /** Byte offset in the unit's (decompressed) input, where known. */
  offset?: number;
  /** Which stage rejected it: decode, transform:<name>, sink:<name>. */
  stage: string;
  reason: string;
  /** The offending input, truncated to a few KiB. */
  raw?: string;
}

export type DeadLetterFn = (d: DeadLetter) => void;

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

/** Counters the engine sums into the progress display and the run summary. */
export interface Counters {
  records: number;
  bytes: number;
  retries: number;
  deadLetters: number;
}
