/**
 * What a file sink committed, for checks after the load: its published files read by an in-memory DuckDB of their
 * own (the files are the table; no database file is locked), locked down so that a check reads those files and
 * nothing else (src/sink-kit/duckdb-read-only.ts): the files are listed once — regular files under the output's root, no
 * link that leads out of it — and DuckDB may open only them. Only local outputs: DuckDB would need the S3 client's
 * credentials and endpoint to read an `s3://` prefix.
 */
import { lstat, realpath } from 'node:fs/promises';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { SluiceError } from '../../core/errors.js';
import type { QueryableOutput } from '../../core/types.js';
import { quoteString } from '../../core/sql.js';
import { lockedDownInstance, readOnlyQuery } from '../duckdb-read-only.js';
import { isS3Url } from './s3.js';

/**
 * `reader`: the DuckDB table function reading the files, given the quoted file list (`read_parquet(${files}, …)`);
 * `root`: the output's directory, which every file must stay inside.
 */
export async function publishedFilesQueryable(
  glob: string,
  root: string,
  reader: (quotedFiles: string) => string,
  label: string,
): Promise<QueryableOutput> {
  if (isS3Url(glob))
    throw new SluiceError(`${label}: checks cannot read an s3:// output yet`, {
      hint: 'remove `checks` from this sink, or check a local copy',
    });
  const files = await publishedFiles(glob, root);
  const sandbox = await lockedDownInstance(files);
  return {
    dialect: 'duckdb',
    // No file yet: an empty relation, so a row count says 0 rather than "no files found".
    relation:
      files.length > 0
        ? reader(`[${files.map((f) => quoteString(f)).join(', ')}]`)
        : '(SELECT NULL AS _none WHERE false)',
    query: (sql) => readOnlyQuery(sandbox.conn, sql),
    close: () => sandbox.close(),
  };
}

/** The files `glob` matches that are regular files inside `root` (a symbolic link is not followed out of it). */
async function publishedFiles(glob: string, root: string): Promise<string[]> {
  const db = await DuckDBInstance.create(':memory:');
  const conn = await db.connect();
  let matched: string[];
  try {
    matched = (
      (await conn.runAndReadAll(`SELECT file FROM glob(${quoteString(glob)}) ORDER BY file`)).getRowObjectsJson() as {
        file: string;
      }[]
    ).map((r) => r.file);
  } finally {
    conn.closeSync();
    db.closeSync();
  }
  const realRoot = await realpath(root).catch(() => path.resolve(root));
  const inside: string[] = [];
  for (const file of matched) {
    const stat = await lstat(file).catch(() => undefined);
    if (!stat?.isFile()) continue;
    const real = await realpath(file).catch(() => undefined);
    if (real !== undefined && (real === realRoot || real.startsWith(realRoot + path.sep))) inside.push(file);
  }
  return inside;
}
