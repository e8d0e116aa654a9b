/** `select`: keep only the listed fields (in that order), or with `exclude: true` drop them. */
import { z } from 'zod';
import type { Row, Transform } from '../core/types.js';
import type { ComponentDef } from '../contracts/component.js';
import { mapRows } from './map-rows.js';

export const selectSchema = z
  .object({
    type: z.literal('select'),
    fields: z
      .array(z.string().min(1))
      .min(1)
      .describe('Top-level field names (use `flatten` first to reach nested ones).'),
    exclude: z
      .boolean()
      .default(false)
      .describe(
        'false: output exactly these fields, in this order (a field a row lacks is null, so every row has the same columns). true: output every field except these.',
      ),
  })
  .strict();

export type SelectConfig = z.infer<typeof selectSchema>;

export const selectTransform: ComponentDef<'transform', SelectConfig, Transform> = {
  kind: 'transform',
  type: 'select',
  description: 'Keep only some fields, or drop some.',
  schema: selectSchema,
  outputColumns(config, input, at) {
    if (!config.exclude) return { columns: [...new Set(config.fields)], from: `${at} (select)` };
    return input && { ...input, columns: input.columns.filter((c) => !config.fields.includes(c)) };
  },
  declares(config, input) {
    if (!input) return undefined;
    if (config.exclude) return input.filter((c) => !config.fields.includes(c.name));
    // A field the input does not declare is null in every row of a declared input, but of no known type.
    const byName = new Map(input.map((c) => [c.name, c]));
    const out = [...new Set(config.fields)].map((f) => byName.get(f));
    return out.every((c) => c !== undefined) ? out : undefined;
  },
  create(config) {
    const fields = config.fields;
    if (config.exclude) {
      const drop = new Set(fields);
      return mapRows((row) => {
        const out: Row = {};
        for (const k in row) if (!drop.has(k)) out[k] = row[k];
        return out;
      });
    }
    return mapRows((row) => {
      const out: Row = {};
      for (const f of fields) out[f] = row[f] ?? null;
      return out;
    });
  },
};
