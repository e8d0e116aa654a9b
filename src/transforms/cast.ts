/**
 * `cast`: convert fields to a type. null stays null and a field the row lacks stays absent; a present value that
 * does not convert either sends the row to the dead letters with the reason (default) or becomes null.
 */
import { z } from 'zod';
import type { Row, Transform } from '../core/types.js';
import type { ComponentDef } from '../contracts/component.js';
import { DateOnly, isDateOnly, isTimestamp, parseIsoTimestamp } from '../core/values.js';
import {
  BIGINT,
  BOOLEAN,
  DATE,
  DOUBLE,
  JSON_TYPE,
  TIMESTAMP,
  VARCHAR,
  type LogicalType,
} from '../core/logical-type.js';
import { FAILED, describeValue, rawRow, toNumber } from './coerce.js';
import { mapRows } from './map-rows.js';

export const CAST_TYPES = ['int', 'double', 'text', 'bool', 'timestamp', 'date', 'json'] as const;
export type CastType = (typeof CAST_TYPES)[number];

/** The column type each cast gives (`json` parses text into values of any shape). */
const CAST_COLUMN_TYPES: Record<CastType, LogicalType> = {
  int: BIGINT,
  double: DOUBLE,
  text: VARCHAR,
  bool: BOOLEAN,
  timestamp: TIMESTAMP,
  date: DATE,
  json: JSON_TYPE,
};

export const castSchema = z
  .object({
    type: z.literal('cast'),
    fields: z
      .record(z.string().min(1), z.enum(CAST_TYPES))
      .refine((m) => Object.keys(m).length > 0, 'list at least one field to cast')
      .describe(
        'Map of field → type. int: integers (numbers with no fraction, integer text, "1,234"); double: numbers ' +
          'and numeric text; text: any scalar as text, Date as ISO 8601, lists/objects as JSON; bool: true/false, ' +
          '"true"/"false"/"yes"/"no"/"1"/"0", 1/0; timestamp: ISO 8601 text (no offset = UTC) or epoch milliseconds; ' +
          'date: YYYY-MM-DD text, or the UTC day of a timestamp; json: JSON text parsed into lists/objects ' +
          '(values that are not text are kept).',
      ),
    // `on_error: null` unquoted is YAML's null, not the text "null": both mean the same here, as the README writes it.
    on_error: z
      .union([z.enum(['dead_letter', 'null']), z.null()])
      .default('dead_letter')
      .describe(
        'When a value does not convert: `dead_letter` sends the whole row to the dead-letter file with the reason; `null` (bare or quoted) sets the field to null and keeps the row.',
      ),
  })
  .strict();

export type CastConfig = z.infer<typeof castSchema>;

export const castTransform: ComponentDef<'transform', CastConfig, Transform> = {
  kind: 'transform',
  type: 'cast',
  description: 'Convert fields to int, double, text, bool, timestamp, date or json.',
  schema: castSchema,
  // Values change type; the set of columns does not.
  outputColumns: (_config, input) => input,
  declares(config, input) {
    const toNull = config.on_error === 'null' || config.on_error === null;
    return input?.map((c) => {
      const type = config.fields[c.name];
      // A value that does not convert becomes null under `on_error: null` (otherwise the row is dead-lettered).
      return type === undefined ? c : { ...c, type: CAST_COLUMN_TYPES[type], nullable: c.nullable || toNull };
    });
  },
  create(config) {
    const casts = Object.entries(config.fields).map(([field, type]) => ({ field, type, fn: CASTERS[type] }));
    const toNull = config.on_error === 'null' || config.on_error === null;
    return mapRows((row, ctx) => {
      let out: Row | undefined;
      let errors: string[] | undefined;
      for (const { field, type, fn } of casts) {
        if (!(field in row)) continue;
        const v = row[field];
        const c = v === null || v === undefined ? null : fn(v);
        if (c === FAILED) (errors ??= []).push(`field \`${field}\`: cannot cast ${preview(v)} to ${type}`);
        out ??= { ...row };
        out[field] = c === FAILED ? null : c;
      }
      if (errors && !toNull) {
        ctx.deadLetter({ unit: ctx.unitId, stage: 'transform:cast', reason: errors.join('; '), raw: rawRow(row) });
        return null;
      }
      return out ?? row;
    });
  },
};

function preview(v: unknown): string {
  const s = typeof v === 'string' ? JSON.stringify(v) : describeValue(v);
  return s.length > 80 ? `${s.slice(0, 80)}…` : s;
}

/** Each returns the converted value or FAILED. */
export const CASTERS: Record<CastType, (v: unknown) => unknown> = {
  int(v) {
    if (typeof v === 'boolean') return FAILED;
    const n = toNumber(v);
    return n !== null && Number.isSafeInteger(n) ? n : FAILED;
  },
  double(v) {
    if (typeof v === 'boolean') return FAILED;
    return toNumber(v) ?? FAILED;
  },
  text(v) {
    if (typeof v === 'string') return v;
    if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return String(v);
    return describeValue(v);
  },
  bool(v) {
    if (typeof v === 'boolean') return v;
    if (typeof v === 'number') return v === 1 ? true : v === 0 ? false : FAILED;
    if (typeof v !== 'string') return FAILED;
    const s = v.trim().toLowerCase();
    if (s === 'true' || s === 'yes' || s === '1') return true;
    if (s === 'false' || s === 'no' || s === '0') return false;
    return FAILED;
  },
  timestamp(v) {
    if (isTimestamp(v)) return v;
    if (isDateOnly(v)) return v.toDate();
    if (typeof v === 'number') {
      const d = new Date(v);
      return Number.isFinite(v) && !Number.isNaN(d.getTime()) ? d : FAILED;
    }
    return parseIsoTimestamp(v) ?? FAILED;
  },
  date(v) {
    if (isDateOnly(v)) return v;
    if (isTimestamp(v)) return DateOnly.fromDate(v);
    if (typeof v !== 'string') return FAILED;
    const d = DateOnly.parse(v);
    if (d) return d;
    const ts = parseIsoTimestamp(v);
    return ts ? DateOnly.fromDate(ts) : FAILED;
  },
  json(v) {
    if (typeof v !== 'string') return v;
    try {
      return JSON.parse(v) as unknown;
    } catch {
      return FAILED;
    }
  },
};
