/**
 * A publish's Parquet writing: staged NDJSON files → Parquet files of about the target size, by DuckDB's writer
 * (`COPY … TO … (FORMAT parquet)`), with the columns of the merged schema.
 */
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import { SluiceError } from '../../src/core/errors.js';
import { duckdbType, quoteIdent, quoteString } from '../../src/schema/duckdb-types.js';
import type { InferredSchema } from '../../src/schema/infer.js';
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
  schema: InferredSchema;
  /** Directory the Parquet files are written to (a temp directory, moved into place by the caller). */
  dir: string;
  /** Part of every file name: tells one publish's files from another's. */
  publishId: string;
  targetBytes: number;
}

export async function copyToParquet(conn: DuckDBConnection, config: ParquetSinkConfig, w: ParquetWrite): Promise<void> {
  const { files, schema, dir, publishId } = w;
  const specs = [...schema.columns].map(
    ([k, t]) => `${quoteString(k)}: ${quoteString(duckdbType(t, { openAs: 'VARCHAR' }))}`,
  );
  const c = config;
  const options = [
    'FORMAT parquet',
    `COMPRESSION ${c.compression}`,
    ...(c.compression_level !== undefined ? [`COMPRESSION_LEVEL ${c.compression_level}`] : []),
    `ROW_GROUP_SIZE ${c.row_group_size}`,
    `FILENAME_PATTERN ${quoteString(`part-${publishId}-{i}`)}`,
    // Not `.parquet` until renamed into place: a reader's glob never matches a file being written.
    `FILE_EXTENSION 'tmp'`,
    // DuckDB cannot split partitioned output by size; a partition's file holds what one publish has for it.
    c.partition_by ? `PARTITION_BY (${c.partition_by.map(quoteIdent).join(', ')})` : `FILE_SIZE_BYTES ${w.targetBytes}`,
  ];
  const list = `[${files.map(quoteString).join(', ')}]`;
  try {
    await conn.run(
      `COPY (SELECT * FROM read_json(${list}, format = 'newline_delimited', columns = {${specs.join(', ')}})) TO ${quoteString(dir)} (${options.join(', ')})`,
    );
  } catch (err) {
    throw new SluiceError(`parquet sink: could not write Parquet: ${(err as Error).message.split('\n')[0]}`, {
      hint: 'the staged units are kept (committed) and published by the next run that finishes; fix the cause and run again',
      cause: err,
    });
  }
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
