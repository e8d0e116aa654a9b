/**
 * `--show`, `sluice schema` and the report reading a ClickHouse sink's table back (OwnOutputQuery): DuckDB cannot
 * reach a ClickHouse server. A client of its own (the sink is not opened), every query with `readonly = 1` as the
 * checks' are; a `merge` table read `FINAL`, as a reader of it should.
 */
import type { OutputReader, Row } from '../../src/core/types.js';
import type { LogicalType } from '../../src/core/logical-type.js';
import { Server, type Target } from './connection.js';
import { logicalColumns, readColumns } from './table.js';
import { chTypeName, qualified, quoteIdent } from './types.js';

export function clickhouseOutputReader(
  target: Target & { password: string },
  names: { schema: string; table: string },
  merged: boolean,
): OutputReader {
  const server = new Server(target);
  const relation = `${qualified(names.schema, names.table)}${merged ? ' FINAL' : ''}`;
  let columns: Promise<Map<string, LogicalType> | undefined> | undefined;
  const written = (): Promise<Map<string, LogicalType> | undefined> =>
    (columns ??= readColumns(server, names.schema, names.table).then((c) => c && logicalColumns(c)));
  return {
    rows: async (limit) => {
      const types = await written();
      if (!types) return [];
      // The data columns only: the sink's own (the load, the version) are not the user's.
      const list = [...types.keys()].map(quoteIdent).join(', ');
      const rows = await server.rows<Row>(
        `SELECT ${list} FROM ${relation} LIMIT ${Math.max(0, Math.floor(limit))}`,
        // Exact: a 64-bit integer beyond 2^53 stays text rather than becoming a nearby number.
        { readonly: 1, output_format_json_quote_64bit_integers: 1 },
      );
      return rows.map((row) => asStored(row, types));
    },
    columns: async () => {
      const types = await written();
      return types && [...types].map(([name, type]) => ({ name, type: chTypeName(type) }));
    },
    count: async () => {
      if (!(await written())) return 0;
      const [row] = await server.rows<Row>(`SELECT count() AS n FROM ${relation}`, { readonly: 1 });
      return Number(row?.n ?? 0);
    },
    close: () => server.close(),
  };
}

/** A row as the other sinks' read-back gives it: booleans as booleans, 64-bit integers as numbers where exact. */
function asStored(row: Row, types: ReadonlyMap<string, LogicalType>): Row {
  const out: Row = { ...row };
  for (const [name, type] of types) {
    const v = out[name];
    if (type.kind === 'boolean' && (v === 0 || v === 1)) out[name] = v === 1;
    else if (type.kind === 'bigint') out[name] = exactNumber(v);
    else if (type.kind === 'list' && type.element.kind === 'bigint' && Array.isArray(v)) out[name] = v.map(exactNumber);
  }
  return out;
}

function exactNumber(v: unknown): unknown {
  return typeof v === 'string' && Number.isSafeInteger(Number(v)) ? Number(v) : v;
}
