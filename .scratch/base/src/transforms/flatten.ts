/**
 * `flatten`: nested objects become top-level columns named by their path (`a: {b: 1}` → `a__b: 1`). Lists are
 * kept as they are (a list of structs stays one column), and so are timestamps and dates.
 */
import { z } from 'zod';
import type { Row, Transform } from '../core/types.js';
import type { ComponentDef } from '../core/component.js';
import { isPlainObject } from './coerce.js';
import { mapRows } from './map-rows.js';

export const flattenSchema = z
  .object({
    type: z.literal('flatten'),
    max_depth: z
      .number()
      .int()
      .min(1)
      .optional()
      .describe(
        'How many levels of nesting to flatten: 1 turns `a: {b: {c: 1}}` into `a__b: {c: 1}`. Unlimited when absent.',
      ),
    separator: z.string().min(1).default('__').describe('Joins the path of a flattened column name.'),
  })
  .strict();

export type FlattenConfig = z.infer<typeof flattenSchema>;

export const flattenTransform: ComponentDef<'transform', FlattenConfig, Transform> = {
  kind: 'transform',
  type: 'flatten',
  description: 'Nested objects → `parent__child` columns; lists kept as they are.',
  schema: flattenSchema,
  create(config) {
    const maxDepth = config.max_depth ?? Infinity;
    const sep = config.separator;
    return mapRows((row) => {
      const out: Row = {};
      flattenInto(out, row, '', 0, maxDepth, sep);
      return out;
    });
  },
};

/**
 * An empty object becomes null (its column would otherwise vanish). When a flattened name equals an existing
 * top-level name, the later one in the row wins.
 */
function flattenInto(out: Row, obj: Row, prefix: string, depth: number, maxDepth: number, sep: string): void {
  for (const k in obj) {
    const v = obj[k];
    const name = prefix === '' ? k : `${prefix}${sep}${k}`;
    if (depth < maxDepth && isPlainObject(v)) {
      if (Object.keys(v).length === 0) out[name] = null;
      else flattenInto(out, v, name, depth + 1, maxDepth, sep);
    } else out[name] = v;
  }
}
