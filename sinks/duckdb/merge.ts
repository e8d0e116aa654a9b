/** `write: merge`: a unit's rows replace the stored rows with the same primary key; within the unit the last wins. */
import type { DuckDBConnection } from '@duckdb/node-api';
import { SluiceError } from '../../src/core/errors.js';
import { quoteIdent } from '../../src/schema/duckdb-types.js';
import type { LogicalType } from '../../src/core/logical-type.js';

/** Every row needs the key: says which key column the unit's data lacks, before anything is written. */
export function checkKeysPresent(
  keys: readonly string[],
  incoming: ReadonlyMap<string, LogicalType>,
  label: string,
): void {
  for (const k of keys) {
    if (!incoming.has(k))
      throw new SluiceError(`${label}: primary key column "${k}" is not in the data`, {
        hint: `every row needs the key for \`write: merge\`: fix \`primary_key\` (the data has ${[...incoming.keys()].slice(0, 12).join(', ')}), or add the field with a transform`,
      });
  }
}

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
