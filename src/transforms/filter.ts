/**
 * `filter`: keep the rows that match simple field comparisons, combined with `all` / `any` lists. Deliberately not
 * an expression language: a condition is `{field, op, value}`.
 *
 * Comparison rules: numbers compare as numbers (numeric text in the row or in `value` counts as a number when the
 * other side is one), timestamps as instants (`value` written as ISO 8601 text), dates as dates, text by code
 * points. A null or missing field matches only `is_null` (as in SQL, `!=` and `not_in` do not match null).
 */
import { z } from 'zod';
import type { Row, Transform } from '../core/types.js';
import type { ComponentDef } from '../contracts/component.js';
import { COMPARISON_OPERATORS, NULL_TEST_OPERATORS } from '../core/filter-grammar.js';
import { isDateOnly, isTimestamp, parseIsoTimestamp } from '../core/values.js';
import { getPath, toNumber } from './coerce.js';
import { columnsUnchanged } from './columns-unchanged.js';
import { mapRows } from './map-rows.js';

/** The service filter's comparisons and null tests (one spelling for both languages), plus `contains`. */
export const FILTER_OPS = [...COMPARISON_OPERATORS, ...NULL_TEST_OPERATORS, 'contains'] as const;
export type FilterOp = (typeof FILTER_OPS)[number];

type Scalar = string | number | boolean | null;
export type Condition =
  { field: string; op: FilterOp; value?: Scalar | Scalar[] } | { all: Condition[] } | { any: Condition[] };

const scalar = z.union([z.string(), z.number(), z.boolean(), z.null()]);
const fieldDoc = 'Field to test; `a.b` reaches into nested objects.';
const opDoc =
  'Comparison: `=`, `!=`, `<`, `<=`, `>`, `>=`, `in` / `not_in` (value is a list), `contains` (text contains the value, or a list has it as an element), `is_null` / `is_not_null` (no value).';
const valueDoc =
  'What to compare with: a scalar, or a list for `in` / `not_in`; omitted for `is_null` / `is_not_null`.';

function checkLeaf(c: { op?: FilterOp; value?: unknown }, ctx: z.RefinementCtx): void {
  const hasValue = c.value !== undefined;
  if (c.op === 'is_null' || c.op === 'is_not_null') {
    if (hasValue) ctx.addIssue({ code: 'custom', path: ['value'], message: `${c.op} takes no value; remove it` });
  } else if (c.op === 'in' || c.op === 'not_in') {
    if (!Array.isArray(c.value))
      ctx.addIssue({ code: 'custom', path: ['value'], message: `${c.op} needs a list value, e.g. [US, DE]` });
  } else if (c.op !== undefined) {
    if (!hasValue || Array.isArray(c.value))
      ctx.addIssue({ code: 'custom', path: ['value'], message: `${c.op} needs a single value to compare with` });
  }
}

const leafSchema = z
  .object({
    field: z.string().min(1).describe(fieldDoc),
    op: z.enum(FILTER_OPS).describe(opDoc),
    value: z
      .union([scalar, z.array(scalar)])
      .optional()
      .describe(valueDoc),
  })
  .strict()
  .superRefine(checkLeaf);

export const conditionSchema: z.ZodType<Condition> = z.lazy(() =>
  z.union([
    leafSchema,
    z.object({ all: z.array(conditionSchema).min(1).describe('Every condition must match.') }).strict(),
    z.object({ any: z.array(conditionSchema).min(1).describe('At least one condition must match.') }).strict(),
  ]),
);

export const filterSchema = z
  .object({
    type: z.literal('filter'),
    field: z.string().min(1).optional().describe(fieldDoc),
    op: z.enum(FILTER_OPS).optional().describe(opDoc),
    value: z
      .union([scalar, z.array(scalar)])
      .optional()
      .describe(valueDoc),
    all: z.array(conditionSchema).min(1).optional().describe('Keep rows matching every one of these conditions.'),
    any: z.array(conditionSchema).min(1).optional().describe('Keep rows matching at least one of these conditions.'),
  })
  .strict()
  .superRefine((c, ctx) => {
    const forms = [c.field !== undefined || c.op !== undefined, c.all !== undefined, c.any !== undefined];
    if (forms.filter(Boolean).length !== 1) {
      ctx.addIssue({
        code: 'custom',
        message: 'give exactly one of: `field` + `op` (+ `value`), `all: [...]`, or `any: [...]`',
      });
      return;
    }
    if (forms[0]) {
      if (c.field === undefined) ctx.addIssue({ code: 'custom', path: ['field'], message: 'name the field to test' });
      if (c.op === undefined)
        ctx.addIssue({ code: 'custom', path: ['op'], message: `choose an op: ${FILTER_OPS.join(', ')}` });
      checkLeaf(c, ctx);
    }
  });

export type FilterConfig = z.infer<typeof filterSchema>;

export const filterTransform: ComponentDef<'transform', FilterConfig, Transform> = {
  kind: 'transform',
  type: 'filter',
  description: 'Keep rows matching field comparisons (`all` / `any` to combine).',
  schema: filterSchema,
  // Rows pass through unchanged (or not at all).
  ...columnsUnchanged,
  create(config) {
    const cond: Condition = config.all
      ? { all: config.all }
      : config.any
        ? { any: config.any }
        : { field: config.field as string, op: config.op as FilterOp, value: config.value };
    const test = compile(cond);
    return mapRows((row) => (test(row) ? row : null));
  },
};

type Predicate = (row: Row) => boolean;

export function compile(c: Condition): Predicate {
  if ('all' in c) {
    const ps = c.all.map(compile);
    return (row) => ps.every((p) => p(row));
  }
  if ('any' in c) {
    const ps = c.any.map(compile);
    return (row) => ps.some((p) => p(row));
  }
  const { field, op, value } = c;
  const get = (row: Row): unknown => getPath(row, field);
  const isNull = (v: unknown): boolean => v === null || v === undefined;
  switch (op) {
    case 'is_null':
      return (row) => isNull(get(row));
    case 'is_not_null':
      return (row) => !isNull(get(row));
    case 'in':
    case 'not_in': {
      const list = (Array.isArray(value) ? value : [value]) as Scalar[];
      const want = op === 'in';
      return (row) => {
        const v = get(row);
        return !isNull(v) && list.some((x) => compareValues(v, x) === 0) === want;
      };
    }
    case 'contains':
      return (row) => contains(get(row), value as Scalar);
    default: {
      const accept = ORDER_TESTS[op];
      return (row) => {
        const v = get(row);
        if (isNull(v)) return false;
        const cmp = compareValues(v, value as Scalar);
        // Values of kinds that do not compare are simply unequal.
        if (cmp === null) return op === '!=';
        return accept(cmp);
      };
    }
  }
}

const ORDER_TESTS: Record<'=' | '!=' | '<' | '<=' | '>' | '>=', (cmp: number) => boolean> = {
  '=': (c) => c === 0,
  '!=': (c) => c !== 0,
  '<': (c) => c < 0,
  '<=': (c) => c <= 0,
  '>': (c) => c > 0,
  '>=': (c) => c >= 0,
};

/** Sign of (row value − wanted), or null when the two cannot be compared. */
export function compareValues(v: unknown, want: Scalar): number | null {
  if (want === null) return null;
  if (isTimestamp(v)) return cmpNum(v.getTime(), wantedInstant(want));
  if (isDateOnly(v)) {
    if (typeof want === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(want.trim())) return cmpStr(v.iso, want.trim());
    return cmpNum(v.toDate().getTime(), wantedInstant(want));
  }
  if (typeof v === 'number') return cmpNum(v, typeof want === 'number' ? want : toNumber(want));
  if (typeof v === 'boolean') {
    const w = typeof want === 'boolean' ? want : want === 'true' ? true : want === 'false' ? false : null;
    return w === null ? null : v === w ? 0 : v ? 1 : -1;
  }
  if (typeof v === 'string') {
    if (typeof want === 'number') return cmpNum(toNumber(v), want);
    if (typeof want === 'boolean') return cmpStr(v, String(want));
    return cmpStr(v, want);
  }
  return null;
}

function wantedInstant(want: Scalar): number | null {
  if (typeof want === 'number') return want;
  return parseIsoTimestamp(want)?.getTime() ?? null;
}

function cmpNum(a: number | null, b: number | null): number | null {
  if (a === null || b === null || Number.isNaN(a) || Number.isNaN(b)) return null;
  return a < b ? -1 : a > b ? 1 : 0;
}

function cmpStr(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function contains(v: unknown, want: Scalar): boolean {
  if (typeof v === 'string') return want !== null && v.includes(String(want));
  if (Array.isArray(v)) return v.some((e) => e === want || (e !== null && compareValues(e, want) === 0));
  return false;
}
