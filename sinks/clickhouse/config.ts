/**
 * The clickhouse sink's configuration: its schema (validated once, by the registry), the names derived from it and
 * the store's limits. Option names follow the other warehouse sinks' (`table`, `write`, `primary_key`); `url` and
 * `database` say where.
 */
import { z } from 'zod';
import type { StoreLimits } from '../../src/core/types.js';
import { mergeKeyRule } from '../../src/sink-kit/merge-key-rule.js';
import { lineageOption } from '../../src/schema/lineage.js';
import { checksOption } from '../../src/observe/checks/config.js';
import { schemaContractOption } from '../../src/schema/contract.js';
import { secretOption } from '../../src/core/secret-option.js';
import { onUnstorableOption } from '../../src/schema/storable.js';
import { generationNames, NEXT_SUFFIX, type TableNames } from '../../src/sink-kit/warehouse/names.js';

/** Columns the sink keeps beside the data, hidden from `SELECT *` (MATERIALIZED): see table.ts. */
export const LOAD_COLUMN = '_sluice_load';
export const VERSION_COLUMN = '_sluice_version';
/** Suffixes of the tables the sink makes beside the target: a unit's staging table, the old generation. */
export const STAGE_SUFFIX = '__sluice_stage_';
export const OLD_SUFFIX = '__sluice_old';
/** The staging suffix's hash: 16 hex digits of the unit's id. */
const STAGE_HASH_CHARS = 16;

/** Where clickhouse-client looks by default, over HTTP. */
export const DEFAULT_URL = 'http://localhost:8123';

export const clickhouseSinkSchema = z
  .object({
    type: z.literal('clickhouse'),
    url: secretOption(
      z
        .string()
        .default(DEFAULT_URL)
        .describe(
          `The server's HTTP interface with the user and password, e.g. \`\${CLICKHOUSE_URL:-${DEFAULT_URL}}\` holding \`http://sluice:secret@clickhouse:8123\` (percent-encode special characters of the password; \`https://\` for TLS). Unset or empty: ${DEFAULT_URL}, as user \`default\` without a password (clickhouse-client's defaults). The password is never logged.`,
        ),
      'connection',
    ),
    database: z
      .string()
      .min(1)
      .default('default')
      .describe(
        'Database of the table (and of `_sluice_state`, `_sluice_runs`); created if missing. Default `default`.',
      ),
    table: z
      .string()
      .min(1)
      .describe(
        'Table to write (a MergeTree; ReplacingMergeTree for `merge`). Created from the declared or first rows: integers `Int64`, numbers `Float64`, text `String`, booleans `UInt8`, lists of scalars `Array(…)`, timestamps, dates and nested records as text (ISO 8601; JSON), every column Nullable; new fields become new columns and widened types are altered in place.',
      ),
    write: z
      .enum(['append', 'replace', 'merge'])
      .default('append')
      .describe(
        '`append`: add the rows. `replace`: the run fills a new table that takes the old one’s place in one RENAME when the run finishes. `merge`: upsert on `primary_key` (a ReplacingMergeTree ordered by the key: read it with `FINAL`); within one unit the last row for a key wins.',
      ),
    primary_key: z
      .array(z.string().min(1))
      .min(1)
      .optional()
      .describe(
        'Column(s) identifying a row, for `write: merge` (required there, not allowed otherwise): the table’s ORDER BY, so they cannot be null (a null key is stored as the type’s default: empty text, 0) and their type cannot change later.',
      ),
    lineage: lineageOption,
    schema_contract: schemaContractOption,
    checks: checksOption,
    on_unstorable: onUnstorableOption,
  })
  .strict()
  .superRefine(mergeKeyRule)
  .superRefine(nameRule);

export type ClickHouseSinkConfig = z.infer<typeof clickhouseSinkSchema>;

/**
 * ClickHouse keeps each table as a directory and each column as files named after it, escaped (every byte but
 * `[A-Za-z0-9_]` becomes `%XX`, three bytes): a name must stay within the file system's 255 bytes with what
 * ClickHouse adds (`.null.mrk`, `.size0.bin`, a table's `.sql`). 80 bytes escape to at most 240.
 */
export const MAX_NAME_BYTES = 80;

/** Bytes of `name` as ClickHouse's file names spell it (`escapeForFileName`). */
export function escapedNameBytes(name: string): number {
  let n = 0;
  for (const b of Buffer.from(name, 'utf8'))
    n += (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a) || b === 0x5f ? 1 : 3;
  return n;
}

/** The longest table name the sink makes from `table`: its staging tables' (and the next generation's). */
function longestTableName(table: string, write: string): string {
  const generation = write === 'replace' ? NEXT_SUFFIX : '';
  return `${table}${generation}${STAGE_SUFFIX}${'0'.repeat(STAGE_HASH_CHARS)}`;
}

/** The table's names, and the ones derived from it, must fit ClickHouse's file names whole. */
function nameRule(c: { table: string; database: string; write: string }, ctx: z.RefinementCtx): void {
  // `<name>.sql` in the metadata directory and the table's data directory: 240 leaves room for the extension.
  const room = 240;
  const longest = longestTableName(c.table, c.write);
  if (escapedNameBytes(longest) > room)
    ctx.addIssue({
      code: 'custom',
      path: ['table'],
      message: `the table name is too long for ClickHouse's file names: the sink also names \`${longest}\`, ${escapedNameBytes(longest)} bytes as a file name (each character but letters, digits and _ takes 3)`,
      params: { hint: `use a shorter table name (letters, digits and _ count 1 byte; ${room} bytes in all)` },
    });
  if (escapedNameBytes(c.database) > room)
    ctx.addIssue({
      code: 'custom',
      path: ['database'],
      message: `the database name takes ${escapedNameBytes(c.database)} bytes as a file name; ClickHouse's directories hold ${room}`,
      params: { hint: 'use a shorter database name' },
    });
}

/** Column names the sink keeps for itself, and the virtual columns MergeTree tables answer to. */
const RESERVED: Readonly<Record<string, string>> = {
  [LOAD_COLUMN]: 'the sink marks each row with the load that attached it',
  [VERSION_COLUMN]: 'the merge table orders the versions of a key by it',
  ...Object.fromEntries(
    ['_part', '_part_index', '_partition_id', '_sample_factor'].map((c) => [c, 'a virtual column of MergeTree tables']),
  ),
};

/**
 * What a ClickHouse table holds: column names (top-level keys; nested records are JSON text, whose keys are data) of
 * 1–80 bytes, not a name the sink or MergeTree keeps; any number of columns in practice (each is files of its own,
 * so 1,000 keeps a table far from the file system's limits); JSON text as deep as sluice's own encoder walks it
 * (1,000, as for Postgres' jsonb). A row is sent as one line of the insert: ClickHouse reads each value whole into
 * memory, and 256 MB keeps a record well within its default `max_memory_usage` of 10 GB for a block of them.
 */
export function clickhouseLimits(): StoreLimits {
  return {
    store: 'ClickHouse',
    names: 'top',
    maxNameBytes: MAX_NAME_BYTES,
    reservedNames: RESERVED,
    maxColumns: 1000,
    maxNesting: 1000,
    maxRecordBytes: 256 * 2 ** 20,
    maxRecordBytesWhy: 'a value is read whole into the server’s memory; sluice keeps records under 256 MB',
  };
}

export type { TableNames };

export interface ClickHouseNames extends TableNames {
  /** The staging table of a unit (per unit id: a rerun of the unit finds and replaces its own). */
  stage(unitId: string, hash: (s: string) => string): string;
  /** The old generation, between the swap and its DROP. */
  old: string;
}

/** The names a sink works with, all derived from its config; `_sluice_state.table_name` is `<database>.<table>`. */
export function tableNames(config: Pick<ClickHouseSinkConfig, 'database' | 'table' | 'write'>): ClickHouseNames {
  const names = generationNames(config.database, config.table, config.write, `${config.database}.${config.table}`);
  return {
    ...names,
    stage: (unitId, hash) => `${names.target}${STAGE_SUFFIX}${hash(unitId).slice(0, STAGE_HASH_CHARS)}`,
    old: `${config.table}${OLD_SUFFIX}`,
  };
}
