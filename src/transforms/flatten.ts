/**
 * `flatten`: nested objects become top-level columns named by their path (`a: {b: 1}` → `a__b: 1`). Lists are
 * kept as they are (a list of structs stays one column), and so are timestamps and dates. Two fields that flatten to
 * one name (`{"a": {"b": 1}, "a__b": 2}`) would keep one value and drop the other: the record is dead-lettered, or
 * with `on_collision: rename` the later field is renamed, said once per name.
 */
import { z } from 'zod';
import type { Row, Transform } from '../core/types.js';
import type { ComponentDef } from '../contracts/component.js';
import { isPlainObject, rawRow } from './coerce.js';
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
    on_collision: z
      .enum(['dead_letter', 'rename'])
      .default('dead_letter')
      .describe(
        'Two fields flattening to one name (`a: {b: 1}` and `a__b: 2`): `dead_letter` the record (default, with both fields named), or `rename` the later field `a__b__2` (warned once per name). Never one value silently dropped.',
      ),
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
    const rename = config.on_collision === 'rename';
    const warned = new Set<string>();
    return mapRows((row, ctx) => {
      const flat = new Flattened(sep, maxDepth);
      flat.add(row, '', '', 0);
      const first = flat.collisions[0];
      if (first === undefined) return flat.row;
      if (!rename) {
        ctx.deadLetter({
          unit: ctx.unitId,
          stage: 'transform:flatten',
          reason: `flatten: ${first.fields.map(quote).join(' and ')} both become ${quote(first.name)}; set a separator no field name contains, or on_collision: rename`,
          raw: rawRow(row),
        });
        return null;
      }
      for (const c of flat.collisions)
        if (!warned.has(c.name)) {
          warned.add(c.name);
          ctx.log.warn(
            `flatten: ${c.fields.map(quote).join(' and ')} both become ${quote(c.name)}: the later is ${quote(c.renamed!)} (said once)`,
          );
        }
      return flat.row;
    });
  },
};

function quote(name: string): string {
  return `\`${name}\``;
}

interface Collision {
  name: string;
  /** The fields that became `name`, as paths (`a.b`, `a__b`). */
  fields: string[];
  /** The name the later field got (`on_collision: rename`). */
  renamed?: string;
}

/** One row flattened: the columns, where each came from, and the names two fields both flattened to. */
class Flattened {
  readonly row: Row = {};
  readonly collisions: Collision[] = [];
  private readonly from = new Map<string, string>();

  constructor(
    private readonly sep: string,
    private readonly maxDepth: number,
  ) {}

  /** An empty object becomes null (its column would otherwise vanish). */
  add(obj: Row, prefix: string, path: string, depth: number): void {
    for (const k in obj) {
      const v = obj[k];
      const name = prefix === '' ? k : `${prefix}${this.sep}${k}`;
      const at = path === '' ? k : `${path}.${k}`;
      if (depth < this.maxDepth && isPlainObject(v) && Object.keys(v).length > 0) this.add(v, name, at, depth + 1);
      else this.set(name, at, depth < this.maxDepth && isPlainObject(v) ? null : v);
    }
  }

  private set(name: string, field: string, value: unknown): void {
    const earlier = this.from.get(name);
    if (earlier === undefined) {
      this.from.set(name, field);
      this.row[name] = value;
      return;
    }
    let renamed = name;
    for (let n = 2; this.from.has(renamed); n++) renamed = `${name}${this.sep}${n}`;
    this.collisions.push({ name, fields: [earlier, field], renamed });
    this.from.set(renamed, field);
    this.row[renamed] = value;
  }
}
