/**
 * What a file sink committed, for checks after the load: its published files read by an in-memory DuckDB of their
 * own (the files are the table; no database file is locked). Only local outputs: DuckDB would need the S3 client's
 * credentials and endpoint to read an `s3://` prefix.
 */
import { DuckDBInstance } from '@duckdb/node-api';
import { SluiceError } from '../../src/core/errors.js';
import type { QueryableOutput, Row } from '../../src/core/types.js';
import { quoteString } from '../../src/schema/duckdb-types.js';
import { isS3Url } from './s3.js';

/** `reader`: the DuckDB table function reading the files, given the quoted glob (`read_parquet(${glob}, …)`). */
export async function publishedFilesQueryable(
  glob: string,
  reader: (quotedGlob: string) => string,
  label: string,
): Promise<QueryableOutput> {
  if (isS3Url(glob))
    throw new SluiceError(`${label}: checks cannot read an s3:// output yet`, {
      hint: 'remove `checks` from this sink, or check a local copy',
    });
  const db = await DuckDBInstance.create(':memory:');
  const conn = await db.connect();
  const query = async (sql: string): Promise<Row[]> => (await conn.runAndReadAll(sql)).getRowObjectsJson() as Row[];
  try {
    await conn.run(`SET TimeZone = 'UTC'`);
    const files = Number((await query(`SELECT count(*) AS n FROM glob(${quoteString(glob)})`))[0]?.n ?? 0);
    return {
      dialect: 'duckdb',
      // No file yet: an empty relation, so a row count says 0 rather than "no files found".
      relation: files > 0 ? reader(quoteString(glob)) : '(SELECT NULL AS _none WHERE false)',
      query,
      close: async () => {
        conn.closeSync();
        db.closeSync();
      },
    };
  } catch (err) {
    conn.closeSync();
    db.closeSync();
    throw err;
  }
}
