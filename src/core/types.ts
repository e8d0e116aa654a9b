/**
 * The contracts every component is written against. Records flow as async iterables of
 * batches (arrays of plain objects): per-record async overhead is what makes naive streaming slow.
 */
import type { DeclaredSchema } from './declared.js';
import type { LogicalType } from './logical-type.js';
import type { DecodeBounds, Limits } from './limits.js';

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

/**
 * Durable key/value state of one pipeline run, written atomically before the call returns.
 * Used for things that must survive a crash *before* any unit commits: the snapshot id of a started filter job,
 * a deep lookup's request id, pages discovered by a crawl.
 */
export interface StateStore {
  get<T = unknown>(key: string): T | undefined;
  set(key: string, value: unknown): Promise<void>;
  delete(key: string): Promise<void>;
}

export interface SourceContext {
  signal: AbortSignal;
  log: Logger;
  state: StateStore;
  counters: Counters;
  deadLetter: DeadLetterFn;
  /** Directory of the pipeline file: relative paths in config resolve against it. */
  baseDir: string;
  /** `plan` must not start paid work (filter jobs, triggers, enrich). */
  dryRun: boolean;
  /**
   * The run is one shard of several (`--shard i/n`, e.g. one machine of a fan-out). Sources must not start paid
   * jobs then: every shard would start and pay for its own.
   */
  sharded?: boolean;
  /**
   * In dry runs, sources describe what a run would do: `request` for an HTTP call it would make (e.g.
   * `POST /datasets/filter (paid: starts a filter job)`), `note` for anything else worth telling.
   */
  report?: (kind: 'request' | 'note', text: string) => void;
  /**
   * Incremental loads: the checkpoints committed by earlier runs of this pipeline, by the unit's source id (as
   * `plan()` returned it, without any run prefix), counting only what every sink committed. Empty on a first run,
   * with `--reset-cursor` / `--fresh`, and in dry runs that have no sinks open.
   */
  checkpoints?: ReadonlyMap<string, unknown>;
  /**
   * The run's clock, ms since the epoch: the service's (as its `Date` header tells it; an emulator's moved clock)
   * once the engine knows it, else this machine's. A source that stores a time for a later run to compare with its
   * "now" (a crawl page's fetch time, SERP `refresh_after`) takes both ends from here, so they are one clock.
   * Absent: `Date.now`.
   */
  now?: () => number;
  /** The pipeline's bounds on answers (core/limits.ts); absent: the defaults. */
  limits?: Limits;
  /**
   * A backfill run (`sluice run --from … [--to …]`): the source loads this window of its cursor instead of what is
   * new, and its units' checkpoints must not move the nightly cursor back (nor forward past records it skipped).
   */
  backfill?: BackfillWindow;
}

/** A window of a source's cursor to load again: the values after `from`, up to `to` included (none: up to now). */
export interface BackfillWindow {
  /** What the values are of, e.g. the cursor field `timestamp`: for the log and the run history. */
  of: string;
  from: string | number;
  to?: string | number;
}

export interface Source {
  /**
   * Split the job into units. May start a paid job (filter, trigger) when not dryRun, and then must checkpoint
   * its id in `ctx.state` before waiting on it. Sources whose units are discovered while reading (crawl pages)
   * return the units known so far and yield more through `discover`.
   */
  plan(ctx: SourceContext): Promise<WorkUnit[]>;
  /** Read one unit as batches. Must be safe to call again for the same unit after a crash. */
  read(unit: WorkUnit, ctx: SourceContext): AsyncIterable<Batch>;
  /**
   * Optional: for crawls, units found while reading a unit (the next page). Called by the engine after `read`
   * finished for `unit`. Returned units are scheduled unless already committed.
   */
  discover?(unit: WorkUnit, ctx: SourceContext): WorkUnit[];
  /**
   * Optional fast path: the unit's bytes as a local file, for sinks that load files natively when the pipeline
   * has no JS transform (DuckDB reads JSONL faster than JS can hand it rows). Sources that download put the
   * bytes in `tmpDir` (`temporary: true`, the engine deletes the file); local-file sources return their path.
   * `read(unit)` must yield exactly what decoding this file with `file.decode` yields: the engine relies on it.
   */
  rawFile?(unit: WorkUnit, ctx: SourceContext, tmpDir: string): Promise<RawFile>;
  /**
   * Optional: checks against the service, with free calls only, that what the config names exists before anything
   * is paid — the key is accepted, the zone exists and serves search pages, the dataset / snapshot / request exists.
   * Throws a `SluiceError` whose hint is the fix. `plan` and `run` call it once, before `plan`.
   */
  preflight?(ctx: SourceContext): Promise<void>;
  /**
   * Optional (incremental sources): the unit's checkpoint — what the unit advanced the cursor to — once `read(unit)`
   * has yielded its last batch (or, when `checkpointFromRows` is false, at any time). The engine hands it to the
   * sinks with the unit's rows (`UnitCommit`); undefined = none. The next run's `plan()` sees it in `ctx.checkpoints`.
   */
  unitCheckpoint?(unit: WorkUnit): unknown;
  /** The checkpoint depends on the rows `read()` yields: the engine then never loads the unit from its raw file. */
  readonly checkpointFromRows?: boolean;
  /** Units the engine reads at once for this source (the source's own config decides; default 4). */
  readonly concurrency?: number;
  close?(): Promise<void>;
}

export type RawFormat = 'jsonl' | 'json' | 'csv';

/**
 * How a raw file's bytes become records: everything a decoder needs besides the bytes. A source hands it over
 * with the file, so whoever decodes the file (a sink's native reader or the engine's JS decoder) reads it the same.
 */
export interface RawDecodeOptions {
  format: RawFormat;
  /** For `json`: dotted path of the records array inside the document. */
  path?: string;
  /** For `csv`: cells holding JSON written by the service; 'auto' decodes cells that start with `[` or `{`. */
  jsonColumns?: 'auto' | string[];
  /** Limits, announced records and the cancelling signal, for whoever decodes the file in JS (core/limits.ts). */
  bounds?: DecodeBounds;
}

/** A unit's undecoded bytes on local disk. gzip or not is for the reader to sniff. */
export interface RawFile {
  path: string;
  decode: RawDecodeOptions;
  temporary: boolean;
}

export interface TransformContext {
  log: Logger;
  deadLetter: DeadLetterFn;
  /** Id of the unit being transformed (for dead letters and derived columns). */
  unitId: string;
  /** The unit's params (e.g. query, page, fetch time), for normalizers that add context columns. */
  unitParams: Readonly<Record<string, unknown>>;
}

/** Batches in, batches out; pure where it can be. */
export type Transform = (batches: AsyncIterable<Batch>, ctx: TransformContext) => AsyncIterable<Batch>;

export type WriteDisposition = 'append' | 'replace' | 'merge';

/** A change a sink made to its table / dataset columns while committing a unit (schema evolution). */
export interface SchemaChange {
  /** Column path: `price`, `funding.rounds`, `updates[].likes_count`. */
  column: string;
  change: 'added' | 'widened';
  /** The sink's type names (its own mapping): undefined for `added`. */
  from?: string;
  to: string;
}

export interface CommitResult {
  /** false when the unit had been committed before: committing again is a no-op. */
  committed: boolean;
  records: number;
  /** Columns added or widened by this commit (empty or absent: none). The engine reports them. */
  schemaChanges?: SchemaChange[];
}

export interface SinkContext {
  log: Logger;
  deadLetter: DeadLetterFn;
  baseDir: string;
  /** Name of the pipeline: state tables and manifests are keyed by it. */
  pipeline: string;
  /** `--fresh`: forget committed units (and, for `replace`, start the new generation). */
  fresh: boolean;
  /**
   * The run's id (kept by a resumed run; unit ids handed to the sink start with it). A sink that records its loads
   * (DuckDB's `_sluice_runs`) keys them by it. Absent when no engine run drives the sink (tests, benches).
   */
  runId?: string;
  /**
   * Columns the pipeline's transforms declare (a normalizer preset's): the sink creates every one of them from the
   * first run, with the declared type, in this order — even when no row fills them. Absent: columns are inferred.
   */
  declared?: DeclaredSchema;
}

/**
 * What a sink's store can hold, declared as data: names, nesting, sizes and partition values beyond these make a
 * record unstorable there. The engine's record judge (schema/storable.ts) applies them to every record before the
 * sink sees it, so a record is refused (or repaired) while its unit is staged — never found at commit or publish,
 * where it would fail the whole unit, or every later run.
 */
export interface StoreLimits {
  /** The store, for reasons: `DuckDB`, `Postgres`. */
  store: string;
  /**
   * Which keys become names in the store: `top` — top-level keys (columns; nested objects are stored as JSON),
   * `all` — struct fields too, at any depth; `none` — keys are data (JSON text). Names must not be empty nor hold NUL.
   */
  names: 'none' | 'top' | 'all';
  /** Longest name, in UTF-8 bytes. */
  maxNameBytes?: number;
  /** Names that differ only in case are one name in the store. */
  caseInsensitive?: boolean;
  /** Column names the store keeps for itself, each with why. */
  reservedNames?: Readonly<Record<string, string>>;
  /** Most columns a table holds. */
  maxColumns?: number;
  /**
   * Most bytes one row takes in a table's page, where numbers, booleans and timestamps take 8 bytes each and longer
   * values are moved out of the row, leaving a pointer (Postgres: 8160).
   */
  maxRowBytes?: number;
  /** Deepest nesting of objects and lists below the record (`{a: {b: 1}}` is 1). */
  maxNesting: number;
  /** Largest record as JSON text, in bytes, and where that limit comes from. */
  maxRecordBytes: number;
  maxRecordBytesWhy?: string;
  /** Hive partitioning: each value of these columns becomes a directory `<column>=<value escaped>`. */
  partitions?: {
    columns: readonly string[];
    /** Longest directory name (`<column>=<value>`), in bytes. */
    maxSegmentBytes: number;
    /** Longest run of partition directories, separators included. */
    maxPathBytes: number;
  };
}

/**
 * What happens to a record a sink cannot store as it is (`on_unstorable`): `dead_letter` — it goes to the dead
 * letters, with the reason; `repair` — names the store refuses are renamed and over-long text is cut, reported in the
 * log (what cannot be repaired — nesting, partition values, too many columns — is dead-lettered).
 */
export type UnstorablePolicy = 'dead_letter' | 'repair';

/**
 * The record judge as a native load meets it: a sink that loads a raw file itself checks every record with it while
 * it scans the file, and refuses the file (`NativeLoadRefused`) at the first record it refuses, so the engine decodes
 * the file in JS, where the judge dead-letters (or repairs) that record alone.
 */
export interface RecordCheck {
  /** Why the store cannot hold `row` as it is; undefined when it can (its names are then the store's). */
  refusal(row: Row): string | undefined;
}

/** What a sink can do, declared rather than inferred from its type name (dlt's destination capabilities). */
export interface SinkCapabilities {
  /**
   * Raw files the sink loads natively through `writeUnitFile` (the fast path); empty = rows only. A sink may still
   * refuse one file at load time with `NativeLoadRefused` (core/errors.ts), and the engine then decodes it in JS.
   */
  nativeFormats: readonly RawFormat[];
  /** What its store can hold (absent: anything); read after `open()`, where it may depend on what the sink found. */
  limits?: StoreLimits;
}

/** What a compaction did (Sink.compact): data files before and after, small files replaced, new files written. */
export interface CompactSummary {
  filesBefore: number;
  filesAfter: number;
  replaced: number;
  written: number;
}

/** A query that reads a sink's output back through DuckDB (`--show`), and the database file it runs in. */
export interface OutputQuery {
  /** undefined: an in-memory DuckDB (files read with read_parquet / read_json). */
  database?: string;
  sql: string;
}

/**
 * What a sink committed, readable by SQL in the sink's own dialect: checks after the load (src/observe/checks) run
 * through it, never through a sink's type name.
 */
export interface QueryableOutput {
  readonly dialect: 'duckdb' | 'postgres';
  /** The committed rows as a FROM-clause item: a quoted table, or `read_parquet(…)` over the committed files. */
  readonly relation: string;
  /** The rows a query returns, as JSON-compatible objects. */
  query(sql: string): Promise<Row[]>;
  /** Releases what `queryable()` opened for it (not the sink). */
  close(): Promise<void>;
}

/**
 * A sink owns its atomic commit: a unit's records and the unit's checkpoint become visible together or not at all.
 * The engine serialises nothing: a sink must accept `writeUnit` calls for different units concurrently.
 */
export interface Sink {
  readonly capabilities: SinkCapabilities;
  /** One line for summaries and `plan`: type, where it writes (as typed from the current directory), table. */
  describe(): string;
  /** `--show`: how to read back what the sink wrote; works without `open()`. */
  outputQuery(limit: number): OutputQuery;
  /**
   * Optional: a lock file the engine takes before `open()` and releases after `close()`, for output that two
   * pipelines could share (a file sink's directory). Sinks whose store locks itself (a DuckDB file) have none.
   * `baseDir` is the pipeline file's directory, which relative paths in the config resolve against.
   */
  lockPath?(baseDir: string): string;
  /**
   * Once per run, before any unit. One that throws has released what it took: a transient failure (core/retry.ts)
   * is followed by another `open()` (stages/open-sinks.ts).
   */
  open(ctx: SinkContext): Promise<void>;
  /** Ids of units already committed by earlier runs of this pipeline into this sink. */
  committedUnits(): Promise<Set<string>>;
  /**
   * Optional (incremental loads): the `checkpoint` of every committed unit that had one, by unit id, as committed
   * together with the unit's rows. A sink without it cannot take part in cursor state.
   */
  committedCheckpoints?(): Promise<Map<string, unknown>>;
  /**
   * Optional (`sluice state drop`): removes what the sink holds of this pipeline — its table or files — together with
   * its committed units and checkpoints, so neither outlives the other. Called after `open()`, under the run locks;
   * returns what it removed, for the run history.
   */
  drop?(): Promise<string[]>;
  /**
   * The columns of the sink's table / dataset as committed so far (after `open()`); undefined when nothing exists
   * yet. The engine's schema-contract gate checks each unit's rows against them.
   */
  currentColumns?(): Promise<ReadonlyMap<string, LogicalType> | undefined>;
  /** The sink's own name for a column type (`TIMESTAMP`, `timestamptz`, `string`), for `sluice schema` and reports. */
  typeName(t: LogicalType): string;
  /**
   * Consume the unit's batches and commit them atomically with the unit id and `commit.checkpoint()` (called once
   * the batches are drained). No-op if already committed.
   */
  writeUnit(unit: WorkUnit, batches: AsyncIterable<Batch>, commit: UnitCommit): Promise<CommitResult>;
  /**
   * Optional fast path for the formats in `capabilities.nativeFormats`: load a unit's file (gzip or not) natively,
   * atomically with the unit id and `commit.checkpoint()`, giving exactly the rows `writeUnit` would give for the
   * file decoded with `file.decode`. Throws `NativeLoadRefused` when the file cannot be loaded as a whole (the
   * engine then decodes it in JS); any other error fails the unit like an error of `writeUnit`. `check` is the
   * engine's record judge for this sink: every record must pass it, or the file is refused.
   */
  writeUnitFile?(unit: WorkUnit, file: RawFile, commit: UnitCommit, check?: RecordCheck): Promise<CommitResult>;
  /** Called once after every unit succeeded (e.g. `replace` swaps the new generation in here). */
  finish(): Promise<void>;
  /**
   * Optional (file sinks): `sluice compact` — rewrites the small published files of the output into files of about
   * the target size, under the output's commit protocol. Called instead of `open()`, under the output's lock.
   */
  compact?(ctx: SinkContext): Promise<CompactSummary>;
  /** Optional: what the sink committed, for checks after the load; called after `finish()`, before `close()`. */
  queryable?(): Promise<QueryableOutput>;
  close(): Promise<void>;
}
