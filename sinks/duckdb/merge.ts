/** `write: merge`: a unit's rows replace the stored rows with the same primary key; within the unit the last wins. */
import type { DuckDBConnection } from '@duckdb/node-api';
import { quoteIdent } from '../../src/core/sql.js';

/**
 * Merges the rows of `source` (a table expression) into `table`, inside the caller's transaction. Returns the rows
 * the unit had (not the rows left after duplicates within it collapsed), as `append` counts them.
 */
export async function mergeRows(
  conn: DuckDBConnection,
  table: string,
  source: string,
  keys: readonly string[],
): Promise<number> {
  const quotedKeys = keys.map(quoteIdent);
  const stageName = quoteIdent('_sluice_merge_stage');
  const stage = `temp.${stageName}`;
  await conn.run(`CREATE OR REPLACE TEMP TABLE ${stageName} AS SELECT * FROM ${source}`);
  try {
    await conn.run(
      `DELETE FROM ${table} AS t USING ${stage} AS s WHERE ${quotedKeys.map((k) => `t.${k} IS NOT DISTINCT FROM s.${k}`).join(' AND ')}`,
    );
    // The temp table keeps the file's row order in its rowid: the last row for a key wins.
    await conn.run(
      `INSERT INTO ${table} BY NAME SELECT * FROM ${stage} QUALIFY row_number() OVER (PARTITION BY ${quotedKeys.join(', ')} ORDER BY rowid DESC) = 1`,
    );
    const n = await conn.runAndReadAll(`SELECT count(*) FROM ${stage}`);
    return Number(n.getRows()[0]![0]);
  } finally {
    await conn.run(`DROP TABLE IF EXISTS ${stage}`);
  }
}
