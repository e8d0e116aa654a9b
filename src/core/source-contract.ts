/**
 * The source contract: how a source splits its job into units and reads them, and the context the engine gives it
 * (state that survives a crash, the committed checkpoints, the run's clock). Apart from the sink contract because a
 * source author needs only this, and the raw-file types here are what a source hands to the sinks' fast path.
 */
import type { Limits, DecodeBounds } from './limits.js';
import type { PaidWork } from './paid-work.js';
import type { Batch, Counters, DeadLetterFn, Logger, WorkUnit } from './records.js';

/**
 * Durable key/value state of one pipeline run, written atomically before the call returns.
 * Used for things that must survive a crash *before* any unit commits: the snapshot id of a started filter job,
 * a deep lookup's request id, pages discovered by a crawl.
 *
 * A new run starts with an empty state, except for the keys under `KEPT_STATE_PREFIX`: what a source paid to learn
 * and may use again on later nights (the places a search found), kept until a run starts over (`--fresh`,
 * `--reset-cursor`).
 */
export interface StateStore {
  get<T = unknown>(key: string): T | undefined;
  set(key: string, value: unknown): Promise<void>;
  delete(key: string): Promise<void>;
}

/** State keys that outlive their run (see `StateStore`). */
export const KEPT_STATE_PREFIX = 'kept:';

export interface SourceContext {
  signal: AbortSignal;
  log: Logger;
  state: StateStore;
  /**
   * The run's ledger of paid work (core/paid-work.ts): every billed call the source makes is recorded here as the
   * service answers it, before the answer is used.
   */
  paid: PaidWork;
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

/**
 * What reading a unit learned, handed back with its records: the return value of the iterator `Source.read` gives
 * (`return { checkpoint }` at the end of an async generator). Values out, never instance state a caller reads later.
 */
export interface UnitEnd {
  /**
   * What the unit advanced the source's cursor to (incremental sources), JSON-serialisable: the sinks commit it with
   * the unit's rows, and the next run's `plan()` finds it in `ctx.checkpoints`. Absent: none.
   */
  checkpoint?: unknown;
  /** Units this one leads to (the next page of a crawl), scheduled unless already committed. */
  next?: readonly WorkUnit[];
}

/** A unit's records in batches; the iterator's return value is what the read learned (`UnitEnd`). */
export interface UnitRead {
  [Symbol.asyncIterator](): AsyncIterator<Batch, UnitEnd | void, undefined>;
}

export interface Source {
  /** Units the engine reads at once for this source (the source's own config decides). */
  readonly concurrency: number;
  /**
   * The source keeps a cursor: each unit's read ends with its checkpoint (`UnitEnd.checkpoint`, and
   * `RawFile.checkpoint` for its raw file). The engine then reads the checkpoints the sinks committed before
   * `plan()`, and refuses a sink that cannot store them.
   */
  readonly incremental: boolean;
  /**
   * Split the job into units. May start a paid job (filter, trigger) when not dryRun, and then must checkpoint
   * its id in `ctx.state` before waiting on it. Sources whose units are discovered while reading (crawl pages)
   * return the units known so far and hand on more as each read ends (`UnitEnd.next`).
   */
  plan(ctx: SourceContext): Promise<WorkUnit[]>;
  /** Read one unit as batches, ending with what the read learned. Must be safe to call again for the same unit. */
  read(unit: WorkUnit, ctx: SourceContext): UnitRead;
  /**
   * Optional (crawls): the units a unit committed by an earlier attempt leads to, as the source's checkpointed state
   * knows them — a unit read in this attempt hands them over itself (`UnitEnd.next`).
   */
  discover?(unit: WorkUnit, ctx: SourceContext): WorkUnit[];
  /**
   * Optional fast path: the unit's bytes as a local file, for sinks that load files natively when the pipeline
   * has no JS transform (DuckDB reads JSONL faster than JS can hand it rows). Sources that download put the
   * bytes in `tmpDir` (`temporary: true`, the engine deletes the file); local-file sources return their path.
   * Decoding the file with `file.decode` must yield exactly what `read(unit)` yields, and the file carries the
   * checkpoint `read` would end with: a source whose checkpoint depends on the rows has no raw files.
   */
  rawFile?(unit: WorkUnit, ctx: SourceContext, tmpDir: string): Promise<RawFile>;
  /**
   * Optional: checks against the service, with free calls only, that what the config names exists before anything
   * is paid — the key is accepted, the zone exists and serves search pages, the dataset / snapshot / request exists.
   * Throws a `SluiceError` whose hint is the fix. `plan` and `run` call it once, before `plan`.
   */
  preflight?(ctx: SourceContext): Promise<void>;
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
  /** The unit's checkpoint, as `read` would end with it (incremental sources). */
  checkpoint?: unknown;
}
