/** `rename`: rename top-level fields, keeping their position in the row. */
import { z } from 'zod';
import type { Row, Transform } from '../core/types.js';
import type { ComponentDef } from '../contracts/component.js';
import { mapRows } from './map-rows.js';

export const renameSchema = z
  .object({
    type: z.literal('rename'),
    fields: z
      .record(z.string().min(1), z.string().min(1))
      .refine((m) => Object.keys(m).length > 0, 'list at least one field to rename')
      .refine(
        (m) => new Set(Object.values(m)).size === Object.values(m).length,
        'two fields are renamed to the same name; give each its own',
      )
      .describe(
        'Map of old name → new name, e.g. `{ display_link: domain }`. A field the row lacks is skipped; when the new name already exists in the row, the renamed field replaces it.',
      ),
  })
  .strict();

export type RenameConfig = z.infer<typeof renameSchema>;

export const renameTransform: ComponentDef<'transform', RenameConfig, Transform> = {
  kind: 'transform',
  type: 'rename',
  description: 'Rename fields.',
  schema: renameSchema,
  outputColumns(config, input) {
    if (!input) return undefined;
    const map: Record<string, string> = config.fields;
    // A renamed field replaces one of the new name; a field the rows lack is skipped.
    const renamed = input.columns.filter((c) => c in map).map((c) => map[c]!);
    const kept = input.columns.filter((c) => !(c in map) && !renamed.includes(c));
    return { ...input, columns: [...kept, ...renamed] };
  },
  declares(config, input) {
    if (!input) return undefined;
    const map = new Map(Object.entries(config.fields));
    const names = new Set(input.map((c) => c.name));
    // As rows are renamed: a renamed column keeps its place; one a present column is renamed to is replaced.
    const replaced = new Set([...map].filter(([from]) => names.has(from)).map(([, to]) => to));
    return input.flatMap((c) => {
      const to = map.get(c.name);
      if (to !== undefined) return [{ ...c, name: to }];
      return replaced.has(c.name) ? [] : [c];
    });
  },
  create(config) {
    const map = new Map(Object.entries(config.fields));
    const targets = new Set(map.values());
    return mapRows((row) => {
      const out: Row = {};
      for (const k in row) {
        const to = map.get(k);
        if (to !== undefined) out[to] = row[k];
        // A field that a rename targets is replaced by the renamed one, unless it is itself renamed away.
        else if (!targets.has(k) || !hasSourceFor(k, row, map)) out[k] = row[k];
      }
      return out;
    });
  },
};

function hasSourceFor(target: string, row: Row, map: Map<string, string>): boolean {
  for (const [from, to] of map) if (to === target && from in row) return true;
  return false;
}
