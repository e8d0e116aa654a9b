/** Countries available per zone type (`GET /countrieslist`): one row per (zone type, country). */
import { z } from 'zod';
import type { Row, Source } from '../core/types.js';
import type { ComponentDef } from '../contracts/component.js';
import { oneShotSource } from './one-shot.js';

export const countriesSchema = z.object({ type: z.literal('countries') }).strict();
export type CountriesConfig = z.infer<typeof countriesSchema>;

export const countriesSource: ComponentDef<'source', CountriesConfig, Source> = {
  kind: 'source',
  type: 'countries',
  description: 'Countries available per zone type: one row per (zone_type, country_code).',
  schema: countriesSchema,
  create: (_cfg, deps) =>
    oneShotSource(deps, 'GET /countrieslist', async (client) => {
      const rows: Row[] = [];
      const { zone_types } = await client.zones.countries();
      for (const [zoneType, v] of Object.entries(zone_types))
        for (const code of v.country_codes) rows.push({ zone_type: zoneType, country_code: code });
      return rows;
    }),
};
