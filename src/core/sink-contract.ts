/**
 * The sink contract: a sink owns its atomic commit of a unit's rows with the unit's checkpoint, declares what it
 * can do (native formats, store limits) and how its output is read back. Apart from the source contract because the
 * two meet only through records and units (records.ts) and raw files (source-contract.ts).
 */
import type { DeclaredSchema } from './declared.js';
import type { LogicalType } from './logical-type.js';
import type { Batch, DeadLetterFn, Logger, Row, UnitCommit, WorkUnit } from './records.js';
import type { RawFile, RawFormat } from './source-contract.js';
import type { RecordCheck, StoreLimits } from './store-limits.js';

/** A change a sink made to its table / dataset columns while committing a unit (schema evolution). */
export interface SchemaChange {
  /** Column path: `price`, `funding.rounds`, `updates[].likes_count`. */
  column: string;
  change: 'added' | 'widened';
  /** The sink's type names (its own mapping): undefined for `added`. */
  from?: string;
  to: string;
}

/** The schema changes of one sink during a run, for its summary and history. */
export interface SinkSchemaChanges {
  /** `sink.describe()`. */
  sink: string;
  changes: SchemaChange[];
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
 * What a sink can do beyond the contract every sink keeps, declared once rather than inferred from its type name
 * (dlt's destination capabilities) or probed for as optional methods: each optional capability is one member that
 * holds everything it takes, so "can it?" and "how?" are the same question.
 */
export interface SinkCapabilities {
  /** Raw files the sink loads itself, and how (the fast path); absent: it takes rows only. */
  readonly native?: NativeLoad;
  /** What its store can hold (absent: anything); read after `open()`, where it may depend on what the sink found. */
  readonly limits?: StoreLimits;
  /**
   * Its output is files two pipelines could share (a directory, an `s3://` prefix): the lock taken for it and its
   * compaction. Absent: a store that locks itself (a database).
   */
  readonly files?: FileOutput;
}

/** A sink's native load of a unit's raw file (`SinkCapabilities.native`). */
export interface NativeLoad {
  /** The raw formats it reads; a file of another format is decoded in JS for it. */
  readonly formats: readonly RawFormat[];
  /**
   * Loads the unit's file (gzip or not) atomically with the unit id and `commit.checkpoint()`, giving exactly the
   * rows `writeUnit` would give for the file decoded with `file.decode`. Throws `NativeLoadRefused`
   * (core/errors.ts) when the file cannot be loaded as a whole (the engine then decodes it in JS for this sink); any
   * other error fails the unit like an error of `writeUnit`. `check` is the engine's record judge for this sink:
   * every record must pass it, or the file is refused.
   */
  load(
    unit: WorkUnit,
    file: RawFile,
    commit: UnitCommit,
    check?: RecordCheck,
    read?: () => void,
  ): Promise<CommitResult>;
  /**
   * A sink that commits several units together (one transaction) calls `read` once it has read all it needs of the
   * file and only its store's part is left, and may have up to `committing` units so at once: the engine reads the
   * next units meanwhile. Absent: the sink reads and commits one unit before the engine reads the next in its place.
   */
  readonly committing?: number;
  /**
   * Told that a unit is on its way to this sink (its source is reading it: a download, before `load`): a sink that
   * commits units together may wait for it. The function returned is called once the unit is no longer on its way
   * (its `load`'s `read` was told, or the unit ended).
   */
  expecting?(): () => void;
}

/** A file output's own lock and compaction (`SinkCapabilities.files`). */
export interface FileOutput {
  /**
   * The lock file the runtime takes before `open()` (and `compact`) and releases after `close()`: opening a file
   * output settles and deletes another writer's temp files, so two pipelines sharing it must not open it at once.
   */
  readonly lockFile: string;
  /**
   * `sluice compact`: rewrites the small published files of the output into files of about the target size, under
   * the output's commit protocol. Called instead of `open()`, under the output's lock.
   */
  compact(ctx: SinkContext): Promise<CompactSummary>;
}

/** What a compaction did (Sink.compact): data files before and after, small files replaced, new files written. */
export interface CompactSummary {
  filesBefore: number;
  filesAfter: number;
  replaced: number;
  written: number;
}

/**
 * How a sink's output is read back outside a run (`--show`'s rows, `sluice schema`'s columns, the report's row
 * counts), without `open()`: a query DuckDB runs, or, for a store DuckDB cannot reach here, the sink's own reader.
 */
export type OutputQuery = DuckDbOutputQuery | OwnOutputQuery;

/** What every way of reading an output back says about it. */
interface OutputQueryCost {
  /**
   * Counting the output's rows reads metadata only (a DuckDB table's, Parquet footers, a MergeTree's parts), not
   * every row: `sluice report` counts only such outputs unasked.
   */
  countIsCheap: boolean;
}

/** A query that reads the output through DuckDB, and the database file it runs in. */
export interface DuckDbOutputQuery extends OutputQueryCost {
  /** undefined: an in-memory DuckDB (files read with read_parquet / read_json). */
  database?: string;
  sql: string;
}

/**
 * The sink reads its own store: a Postgres server, which DuckDB could only read through an extension it downloads
 * at run time. The reader only reads, and releases what it opened in `close()`.
 */
export interface OwnOutputQuery extends OutputQueryCost {
  reader(): Promise<OutputReader>;
}

export interface OutputReader {
  /** The first `limit` rows, as the store returns them; none when nothing was written yet. */
  rows(limit: number): Promise<Row[]>;
  /** The columns, with the sink's own type names (`Sink.typeName`); undefined when nothing was written yet. */
  columns(): Promise<{ name: string; type: string }[] | undefined>;
  /** How many rows the output holds; 0 when nothing was written yet. */
  count(): Promise<number>;
  close(): Promise<void>;
}

/**
 * What a sink committed, readable by SQL in the sink's own dialect: checks after the load (src/observe/checks) run
 * through it, never through a sink's type name.
 */
export interface QueryableOutput {
  readonly dialect: 'duckdb' | 'postgres' | 'clickhouse';
  /** The committed rows as a FROM-clause item: a quoted table, or `read_parquet(…)` over the committed files. */
  readonly relation: string;
  /**
   * The rows ONE query returns, as JSON-compatible objects. Run read-only, enforced by the database: one statement
   * (a second is refused), a query (any other statement is refused), in a read-only transaction, reaching no file
   * or table beyond the output being checked where the store can tell (DuckDB, file outputs). A refusal throws
   * QueryRefused with the database's reason.
   */
  query(sql: string): Promise<Row[]>;
  /** Releases what `queryable()` opened for it (not the sink). */
  close(): Promise<void>;
}

/**
 * A sink owns its atomic commit: a unit's records and the unit's checkpoint become visible together or not at all.
 * The engine serialises nothing: a sink must accept `writeUnit` calls for different units concurrently. Every member
 * is required; what only some sinks can do is declared in `capabilities`.
 */
export interface Sink {
  readonly capabilities: SinkCapabilities;
  /** One line for summaries and `plan`: type, where it writes (as typed from the current directory), table. */
  describe(): string;
  /** `--show`, `sluice schema`, the report: how to read back what the sink wrote; works without `open()`. */
  outputQuery(limit: number): OutputQuery;
  /**
   * Once per run, before any unit. One that throws has released what it took: a transient failure (core/retry.ts)
   * is followed by another `open()`.
   */
  open(ctx: SinkContext): Promise<void>;
  /** Ids of units already committed by earlier runs of this pipeline into this sink. */
  committedUnits(): Promise<Set<string>>;
  /**
   * The `checkpoint` of every committed unit that had one, by unit id, as committed together with the unit's rows
   * (incremental loads: the next run starts from them).
   */
  committedCheckpoints(): Promise<Map<string, unknown>>;
  /**
   * `sluice state drop`: removes what the sink holds of this pipeline — its table or files — together with its
   * committed units and checkpoints, so neither outlives the other. Called after `open()`, under the run locks;
   * returns what it removed, for the run history.
   */
  drop(): Promise<string[]>;
  /**
   * The columns of the sink's table / dataset as committed so far (after `open()`); undefined when nothing exists
   * yet. The schema-contract gate checks each unit's rows against them, and the store gate's judge learns them.
   */
  currentColumns(): Promise<ReadonlyMap<string, LogicalType> | undefined>;
  /** The sink's own name for a column type (`TIMESTAMP`, `timestamptz`, `string`), for `sluice schema` and reports. */
  typeName(t: LogicalType): string;
  /**
   * Consume the unit's batches and commit them atomically with the unit id and `commit.checkpoint()` (called once
   * the batches are drained). No-op if already committed.
   */
  writeUnit(unit: WorkUnit, batches: AsyncIterable<Batch>, commit: UnitCommit): Promise<CommitResult>;
  /** Called once after every unit succeeded (e.g. `replace` swaps the new generation in here). */
  finish(): Promise<void>;
  /** What the sink committed, for checks after the load; called after `finish()`, before `close()`. */
  queryable(): Promise<QueryableOutput>;
  close(): Promise<void>;
}
