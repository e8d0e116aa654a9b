/**
 * The postgres sink's configuration: its schema (validated once, by the registry) and the names derived from it.
 * Option names follow the duckdb sink's (`table`, `schema`, `write`, `primary_key`); `url` replaces `path`.
 */
import { z } from 'zod';
import type { StoreLimits } from '../../src/core/types.js';
import { mergeKeyRule } from '../../src/sink-kit/merge-key-rule.js';
import { lineageOption } from '../../src/schema/lineage.js';
import { checksOption } from '../../src/observe/checks/config.js';
import { schemaContractOption } from '../../src/schema/contract.js';
import { SluiceError } from '../../src/core/errors.js';
import { isKeyValueConnectionString, parseKeyValueConnectionString } from '../../src/core/redact.js';
import { secretOption } from '../../src/core/secret-option.js';
import { onUnstorableOption } from '../../src/schema/storable.js';
import { generationNames, NEXT_SUFFIX, type TableNames } from '../../src/sink-kit/warehouse/names.js';

/** Suffix of the unique index `write: merge` upserts through (as table.ts `keyIndexName` names it). */
export const KEY_INDEX_SUFFIX = '__sluice_key';

export const postgresSinkSchema = z
  .object({
    type: z.literal('postgres'),
    url: secretOption(
      z
        .string()
        .optional()
        .describe(
          "libpq connection string: a URL, e.g. `${DATABASE_URL:-}` or `postgres://user@host:5432/db?sslmode=require`, or libpq's `key=value` form (`host=db port=5432 user=app password='…' dbname=app`). Parts it leaves out come from the libpq environment (`PGHOST`, `PGPORT`, `PGUSER`, `PGPASSWORD`, `PGDATABASE`, `PGSSLMODE`) and ~/.pgpass; unset or empty: all of them do. The password is never logged.",
        ),
      'connection',
    ),
    schema: z
      .string()
      .min(1)
      .default('public')
      .describe('Postgres schema of the table (and of `_sluice_state`); created if missing. Default `public`.'),
    table: z
      .string()
      .min(1)
      .describe(
        'Table to write. Created from the declared or first rows: timestamps `timestamptz`, lists of scalars native arrays, objects and lists of objects `jsonb`; new fields become new columns and widened types are altered in place.',
      ),
    write: z
      .enum(['append', 'replace', 'merge'])
      .default('append')
      .describe(
        '`append`: add the rows. `replace`: the run fills a new table that replaces the old one in one transaction when the run finishes. `merge`: upsert on `primary_key` (`INSERT … ON CONFLICT … DO UPDATE`); within one unit the last row for a key wins.',
      ),
    primary_key: z
      .array(z.string().min(1))
      .min(1)
      .optional()
      .describe('Column(s) identifying a row, for `write: merge` (required there, not allowed otherwise).'),
    lineage: lineageOption,
    schema_contract: schemaContractOption,
    checks: checksOption,
    on_unstorable: onUnstorableOption,
  })
  .strict()
  .superRefine(mergeKeyRule)
  .superRefine(identifierRule)
  .superRefine(connectionStringRule);

export type PostgresSinkConfig = z.infer<typeof postgresSinkSchema>;

/** Column names Postgres refuses in a table (its system columns) or sluice uses beside the data. */
const RESERVED: Readonly<Record<string, string>> = {
  _sluice_seq: 'the merge staging table numbers rows in it',
  ...Object.fromEntries(
    ['ctid', 'xmin', 'xmax', 'cmin', 'cmax', 'tableoid'].map((c) => [c, 'a Postgres system column']),
  ),
};

/**
 * What a Postgres table holds: column names (top-level keys; objects are jsonb, whose keys are data) of 1–63 bytes
 * without NUL, not a system column; at most 1,600 columns (1,599 under `merge`, whose staging table adds one) and
 * 8,160 bytes of a row in a page ("row is too big"); jsonb values up to 255 MB, nested as deep as its parser
 * recurses within `max_stack_depth` (1,000 keeps far from it, and from JSON.stringify's own limit on the way).
 */
export function postgresLimits(config: Pick<PostgresSinkConfig, 'write'>): StoreLimits {
  return {
    store: 'Postgres',
    names: 'top',
    maxNameBytes: 63,
    reservedNames: RESERVED,
    maxColumns: config.write === 'merge' ? 1599 : 1600,
    maxRowBytes: 8160,
    maxNesting: 1000,
    maxRecordBytes: 255 * 2 ** 20,
    maxRecordBytesWhy: 'jsonb holds at most 255 MB',
  };
}

/**
 * The URL to connect with; an empty one (`${DATABASE_URL:-}` with the variable unset) means the environment's.
 * libpq's `key=value` form, which the driver would misread as a URL (its whole text taken for a database name, and
 * printed), is turned into the URL that says the same: `dbname` as the path, every other key a query parameter.
 */
export function connectionUrl(config: Pick<PostgresSinkConfig, 'url'>): string | undefined {
  if (config.url === undefined || config.url.trim() === '') return undefined;
  if (!isKeyValueConnectionString(config.url)) return config.url;
  const pairs = parseKeyValueConnectionString(config.url);
  if (pairs === undefined)
    throw new SluiceError('postgres sink: `url` is not a well-formed libpq connection string', {
      hint: KEY_VALUE_HINT,
    });
  const query = new URLSearchParams();
  for (const [key, value] of pairs) if (key !== 'dbname') query.set(key === 'hostaddr' ? 'host' : key, value);
  const db = pairs.get('dbname');
  return `postgres:///${db === undefined ? '' : encodeURIComponent(db)}?${query.toString()}`;
}

/** Postgres cuts longer identifiers to this many bytes, silently: two long names could become one table. */
export const MAX_IDENTIFIER_BYTES = 63;

/**
 * Names the sink creates must fit Postgres' identifiers whole: the table with the suffixes the sink adds to it (the
 * next generation of `replace`, the key index of `merge`), the schema and the key columns.
 */
function identifierRule(
  c: { schema: string; table: string; write: string; primary_key?: readonly string[] | undefined },
  ctx: z.RefinementCtx,
): void {
  const bytes = (s: string): number => Buffer.byteLength(s, 'utf8');
  const suffixes = [c.write === 'replace' ? NEXT_SUFFIX : '', c.write === 'merge' ? KEY_INDEX_SUFFIX : ''].join('');
  const longest = c.table + suffixes;
  if (bytes(longest) > MAX_IDENTIFIER_BYTES) {
    const room = MAX_IDENTIFIER_BYTES - bytes(suffixes);
    ctx.addIssue({
      code: 'custom',
      path: ['table'],
      message: `the table name is ${bytes(c.table)} bytes; Postgres keeps ${MAX_IDENTIFIER_BYTES} bytes of a name and cuts the rest silently${suffixes ? ` (this sink also names \`${c.table}${suffixes}\`)` : ''}`,
      params: { hint: `use a table name of at most ${room} bytes` },
    });
  }
  if (bytes(c.schema) > MAX_IDENTIFIER_BYTES)
    ctx.addIssue({
      code: 'custom',
      path: ['schema'],
      message: `the schema name is ${bytes(c.schema)} bytes; Postgres keeps ${MAX_IDENTIFIER_BYTES} and cuts the rest silently`,
      params: { hint: `use a schema name of at most ${MAX_IDENTIFIER_BYTES} bytes` },
    });
  c.primary_key?.forEach((k, i) => {
    if (bytes(k) > MAX_IDENTIFIER_BYTES)
      ctx.addIssue({
        code: 'custom',
        path: ['primary_key', i],
        message: `the column name is ${bytes(k)} bytes; Postgres keeps ${MAX_IDENTIFIER_BYTES} and cuts the rest silently`,
        params: { hint: `rename the column (a \`rename\` transform) to at most ${MAX_IDENTIFIER_BYTES} bytes` },
      });
  });
}

/** A libpq `key=value` string must parse: the driver would otherwise read it as a URL and connect elsewhere. */
function connectionStringRule(c: { url?: string | undefined }, ctx: z.RefinementCtx): void {
  if (c.url === undefined || !isKeyValueConnectionString(c.url) || parseKeyValueConnectionString(c.url)) return;
  ctx.addIssue({
    code: 'custom',
    path: ['url'],
    message: 'not a well-formed libpq connection string (a key without `=`, or a quote left open)',
    params: { hint: KEY_VALUE_HINT },
  });
}

const KEY_VALUE_HINT =
  "write `key=value` pairs separated by spaces, quoting a value that holds spaces or quotes (`password='it\\'s'`), or use a postgres:// URL";

export type { TableNames };

/** The names a sink works with, all derived from its config. */
export function tableNames(config: Pick<PostgresSinkConfig, 'schema' | 'table' | 'write'>): TableNames {
  return generationNames(config.schema, config.table, config.write, `${config.schema}.${config.table}`);
}
