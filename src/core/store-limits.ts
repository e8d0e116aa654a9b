/**
 * What a sink's store can hold, declared as data, and what happens to a record it cannot. Apart from the sink
 * contract because it is a vocabulary of its own (names, nesting, sizes, partitions) read by the record judge
 * (schema/storable.ts) and by each sink's config, not by the engine's calls into a sink.
 */
import type { Row } from './records.js';

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
  /**
   * `refusal` of a record parsed from one JSON line of `lineBytes` bytes: the same verdict, sooner where the line's
   * length bounds what the full walk measures.
   */
  refusalOfLine?(row: Row, lineBytes: number): string | undefined;
}
