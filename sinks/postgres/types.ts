/**
 * Logical types ↔ Postgres column types.
 *
 *   bigint → bigint            double → double precision     varchar → text        boolean → boolean
 *   timestamp → timestamptz    date → date                   json → jsonb
 *   list of a scalar → a native array (bigint[], text[], timestamptz[] …)
 *   struct, list of structs / lists / json → jsonb
 *
 * Why arrays for lists of scalars: that is how a Postgres user queries them (`'x' = ANY(tags)`, `unnest`, a GIN
 * index with `@>`), and they widen in place like scalars (`bigint[]` → `double precision[]` → `text[]`). Why jsonb
 * for nested structs: a typed equivalent would be a composite type per struct, which has to be created, named and
 * altered alongside the table, and is awkward to query; jsonb is what Postgres users reach for with documents
 * (`profile->>'name'`, `@>`, `jsonb_path_query`), it takes new fields without DDL, and it is indexable.
 * Timestamps are `timestamptz`: sluice's timestamps are instants (UTC), which is what `timestamptz` stores.
 */
import { quoteIdent } from '../../src/core/sql.js';
import {
  BIGINT,
  BOOLEAN,
  DATE,
  DOUBLE,
  JSON_TYPE,
  TIMESTAMP,
  VARCHAR,
  listOf,
  nativeType,
  type LogicalType,
} from '../../src/core/logical-type.js';

/** `"schema"."table"`. */
export function qualified(schema: string, table: string): string {
  return `${quoteIdent(schema)}.${quoteIdent(table)}`;
}

const SCALAR_TYPES: Partial<Record<LogicalType['kind'], string>> = {
  boolean: 'boolean',
  bigint: 'bigint',
  double: 'double precision',
  varchar: 'text',
  timestamp: 'timestamptz',
  date: 'date',
  json: 'jsonb',
};

/** The Postgres type text of a column of logical type `t`. An open type (only nulls seen) is text. */
export function pgType(t: LogicalType): string {
  switch (t.kind) {
    case 'null':
      return 'text';
    case 'native':
      return t.sql;
    case 'struct':
      return 'jsonb';
    case 'list': {
      const e = t.element;
      if (e.kind === 'null') return 'text[]';
      if (e.kind === 'native') return `${e.sql}[]`;
      const scalar = e.kind === 'json' ? undefined : SCALAR_TYPES[e.kind];
      return scalar === undefined ? 'jsonb' : `${scalar}[]`;
    }
    default:
      return SCALAR_TYPES[t.kind]!;
  }
}

/** Element types of native arrays by `udt_name` (without the leading `_`). */
const UDT_TYPES: Record<string, LogicalType> = {
  int2: BIGINT,
  int4: BIGINT,
  int8: BIGINT,
  float4: DOUBLE,
  float8: DOUBLE,
  text: VARCHAR,
  varchar: VARCHAR,
  bpchar: VARCHAR,
  bool: BOOLEAN,
  timestamptz: TIMESTAMP,
  date: DATE,
  jsonb: JSON_TYPE,
  json: JSON_TYPE,
};

/**
 * A column of an existing table (information_schema's `data_type`, `udt_name`) → logical type. jsonb reads back
 * as JSON (a struct column stored as jsonb holds any JSON); types sluice never writes stay `native`.
 */
export function fromPgColumn(dataType: string, udtName: string): LogicalType {
  if (dataType === 'ARRAY') {
    const e = UDT_TYPES[udtName.replace(/^_/, '')];
    return e === undefined || e === JSON_TYPE ? nativeType(`${udtName.replace(/^_/, '')}[]`) : listOf(e);
  }
  if (dataType === 'USER-DEFINED') return nativeType(udtName);
  // `timestamp without time zone` is a wall-clock time: sluice's instants go in only through the database's cast.
  if (dataType === 'timestamp without time zone') return nativeType(dataType);
  return UDT_TYPES[udtName] ?? nativeType(dataType);
}
