/**
 * A publish's Parquet writing: staged NDJSON files → Parquet files of about the target size, by DuckDB's writer
 * (`COPY … TO … (FORMAT parquet)`), with the columns of the merged schema.
 */
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import { SluiceError } from '../../src/core/errors.js';
import { duckdbType, fromDuckDBType } from '../../src/schema/duckdb-types.js';
import { quoteIdent, quoteString } from '../../src/core/sql.js';
import type { LogicalType } from '../../src/core/logical-type.js';
import { convertExpr } from '../duckdb/table.js';
import { textifies, unreadableAs } from '../../src/sink-kit/output-files/dataset-schema.js';
import type { ParquetSinkConfig } from './config.js';

/**
 * Files of `written` (relative to `dir`) that hold no rows. DuckDB starts the next file as soon as a row group takes
 * a file past FILE_SIZE_BYTES, even after the last row group: a publish whose data ends there leaves an empty file.
 */
export async function emptyFiles(conn: DuckDBConnection, dir: string, written: string[]): Promise<Set<string>> {
  if (written.length === 0) return new Set();
  const list = `[${written.map((rel) => quoteString(path.join(dir, rel))).join(', ')}]`;
  const r = await conn.runAndReadAll(`SELECT file_name FROM parquet_file_metadata(${list}) WHERE num_rows = 0`);
  return new Set(r.getRowObjectsJS().map((row) => path.relative(dir, String(row.file_name)).split(path.sep).join('/')));
}

export interface ParquetWrite {
  /** Staged NDJSON files, read together. */
  files: string[];
  /** Bytes of their longest line: `read_json` fails on an object larger than its `maximum_object_size`. */
  longestLine: number;
  /** The columns every file gets, with the dataset's types (dataset-schema.ts). */
  columns: ReadonlyMap<string, LogicalType>;
  /** Directory the Parquet files are written to (a temp directory, moved into place by the caller). */
  dir: string;
  /** Part of every file name: tells one publish's files from another's. */
  publishId: string;
  targetBytes: number;
}

/** The COPY options every file of the sink is written with. */
function fileOptions(c: ParquetSinkConfig): string[] {
  return [
    'FORMAT parquet',
    `COMPRESSION ${c.compression}`,
    ...(c.compression_level !== undefined ? [`COMPRESSION_LEVEL ${c.compression_level}`] : []),
    `ROW_GROUP_SIZE ${c.row_group_size}`,
  ];
}

/**
 * Whether `err` (a failed publish) is DuckDB's reader refusing a staged file's text: a key twice in an object, or
 * bytes that are not JSON. Raw staged units can hold such text; rows sluice wrote cannot.
 */
export function readJsonRefused(err: unknown): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++)
    if (/JSON transform error|Malformed JSON|has duplicate key/.test(e.message)) return true;
  return false;
}

export async function copyToParquet(conn: DuckDBConnection, config: ParquetSinkConfig, w: ParquetWrite): Promise<void> {
  const { files, columns, dir, publishId } = w;
  // Timestamps are read as TIMESTAMPTZ (DuckDB's TIMESTAMP parser drops a UTC offset in the text) and cast back
  // in the session's UTC, as the DuckDB sink's insert does: both sinks store the same instant.
  const specs = [...columns].map(([k, t]) => `${quoteString(k)}: ${quoteString(duckdbType(t, { forRead: true }))}`);
  const select = [...columns].map(([k, t]) => {
    const read = duckdbType(t, { forRead: true });
    const stored = duckdbType(t);
    return read === stored ? quoteIdent(k) : `CAST(${quoteIdent(k)} AS ${stored}) AS ${quoteIdent(k)}`;
  });
  const c = config;
  const options = [
    ...fileOptions(c),
    `FILENAME_PATTERN ${quoteString(`part-${publishId}-{i}`)}`,
    // Not `.parquet` until renamed into place: a reader's glob never matches a file being written.
    `FILE_EXTENSION 'tmp'`,
    // DuckDB cannot split partitioned output by size; a partition's file holds what one publish has for it.
    c.partition_by ? `PARTITION_BY (${c.partition_by.map(quoteIdent).join(', ')})` : `FILE_SIZE_BYTES ${w.targetBytes}`,
  ];
  const list = `[${files.map(quoteString).join(', ')}]`;
  try {
    await conn.run(
      `COPY (SELECT ${select.join(', ')} FROM read_json(${list}, format = 'newline_delimited', columns = {${specs.join(', ')}}, maximum_object_size = ${2 * w.longestLine + 2})) TO ${quoteString(dir)} (${options.join(', ')})`,
    );
  } catch (err) {
    throw new SluiceError(`parquet sink: could not write Parquet: ${(err as Error).message.split('\n')[0]}`, {
      hint: 'the staged units are kept (committed) and published by the next run that finishes; fix the cause and run again',
      cause: err,
    });
  }
}

/**
 * Compaction (output-files/compact.ts): the rows of published files `inputs` as files of about `targetBytes` in
 * `dir`, read as one union by name — what a reader of the dataset gets for them — with the columns in the dataset's
 * order (`order`, the manifest's), so every file keeps one column order. Returns the names written (`.tmp`) that
 * hold rows.
 */
export async function compactParquet(
  conn: DuckDBConnection,
  config: ParquetSinkConfig,
  w: { inputs: string[]; dir: string; publishId: string; targetBytes: number; order: readonly string[] },
): Promise<string[]> {
  const from = `read_parquet([${w.inputs.map(quoteString).join(', ')}], union_by_name = true, hive_partitioning = false)`;
  const present = (await conn.runAndReadAll(`SELECT * FROM ${from} LIMIT 0`)).columnNames();
  const rank = new Map(w.order.map((k, i) => [k, i]));
  const ordered = present
    .map((k, i) => ({ k, at: rank.get(k) ?? w.order.length + i }))
    .sort((a, b) => a.at - b.at)
    .map(({ k }) => quoteIdent(k));
  const options = [
    ...fileOptions(config),
    `FILENAME_PATTERN ${quoteString(`part-${w.publishId}-{i}`)}`,
    `FILE_EXTENSION 'tmp'`,
    `FILE_SIZE_BYTES ${w.targetBytes}`,
  ];
  try {
    await conn.run(`COPY (SELECT ${ordered.join(', ')} FROM ${from}) TO ${quoteString(w.dir)} (${options.join(', ')})`);
  } catch (err) {
    throw new SluiceError(`parquet sink: could not compact files: ${(err as Error).message.split('\n')[0]}`, {
      hint: 'nothing was changed: the small files stay as they are; fix the cause and run `sluice compact` again',
      cause: err,
    });
  }
  const written = await listFiles(w.dir);
  const empty = await emptyFiles(conn, w.dir, written);
  return written.filter((f) => !empty.has(f));
}

/** A published file's columns, as DuckDB reads them. */
export async function fileColumns(conn: DuckDBConnection, file: string): Promise<Map<string, LogicalType>> {
  const r = await conn.runAndReadAll(
    `SELECT * FROM read_parquet(${quoteString(file)}, hive_partitioning = false) LIMIT 0`,
  );
  const names = r.columnNames();
  const types = r.columnTypes();
  return new Map(names.map((n, i) => [n, fromDuckDBType(types[i]!)]));
}

/**
 * Rewrites `file` to `to` when a union of the files could not give its rows the values the DuckDB sink's table has
 * after widening the dataset's columns from `before` to `after`: a column the union cannot read as the new type
 * (`unreadableAs`), or one that turns into text while the file holds a type older than `before` (`textifies`).
 * Values are converted as the DuckDB sink's ALTERs converted its table's (`convertExpr`): from the file's type to
 * the dataset's old type, then to the new one. False, and nothing written, when the file needs no rewrite.
 */
export async function rewriteIfNeeded(
  conn: DuckDBConnection,
  config: ParquetSinkConfig,
  file: string,
  to: string,
  before: ReadonlyMap<string, LogicalType>,
  after: ReadonlyMap<string, LogicalType>,
): Promise<boolean> {
  const own = await fileColumns(conn, file);
  let needed = false;
  const select = [...own].map(([k, t]) => {
    const col = quoteIdent(k);
    const old = before.get(k);
    const target = after.get(k);
    // Already the dataset's type (a rewrite that a crash rolled forward): converting again would quote text twice.
    if (target === undefined || duckdbType(t) === duckdbType(target)) return col;
    const older = old !== undefined && duckdbType(t) !== duckdbType(old);
    if (!unreadableAs(t, target) && !(older && textifies(old, target))) return col;
    needed = true;
    const asOld = older ? convertExpr(col, t, old, 0) : col;
    return `${convertExpr(asOld, old ?? t, target, 0)} AS ${col}`;
  });
  if (!needed) return false;
  try {
    await conn.run(
      `COPY (SELECT ${select.join(', ')} FROM read_parquet(${quoteString(file)}, hive_partitioning = false)) TO ${quoteString(to)} (${fileOptions(config).join(', ')})`,
    );
  } catch (err) {
    throw new SluiceError(
      `parquet sink: could not rewrite ${file} with the widened types: ${(err as Error).message.split('\n')[0]}`,
      {
        hint: 'the staged units are kept (committed) and published by the next run that finishes; fix the cause and run again',
        cause: err,
      },
    );
  }
  return true;
}

/** Relative paths (`/`-separated) of the files under `dir`. */
export async function listFiles(dir: string, prefix = ''): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(path.join(dir, prefix), { withFileTypes: true })) {
    const rel = prefix ? `${prefix}/${e.name}` : e.name;
    if (e.isDirectory()) out.push(...(await listFiles(dir, rel)));
    else out.push(rel);
  }
  return out.sort();
}
