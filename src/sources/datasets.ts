/** The dataset catalogue (`GET /datasets/list`): one row per dataset. */
import { z } from 'zod';
import type { Source } from '../core/types.js';
import type { ComponentDef } from '../contracts/component.js';
import { oneShotSource } from './one-shot.js';

export const datasetsSchema = z.object({ type: z.literal('datasets') }).strict();
export type DatasetsConfig = z.infer<typeof datasetsSchema>;

export const datasetsSource: ComponentDef<'source', DatasetsConfig, Source> = {
  kind: 'source',
  type: 'datasets',
  description: 'The dataset catalogue: one row per dataset (id, name, size). Names are not unique: key on id.',
  schema: datasetsSchema,
  create: (_cfg, deps) =>
    oneShotSource(deps, 'GET /datasets/list', async (client) =>
      (await client.datasets.list()).map((d) => ({ id: d.id, name: d.name.trim(), size: d.size })),
    ),
};
