/** Every source, listed explicitly: the pipeline registry and the generated docs read this list. */
import type { ComponentDef } from '../contracts/component.js';
import { countriesSource } from './countries.js';
import { datasetsSource } from './datasets.js';
import { deepLookupSource } from './deep-lookup.js';
import { fileSource } from './file.js';
import { reviewsSource } from './reviews.js';
import { serpSource } from './serp.js';
import { snapshotSource } from './snapshot.js';
import { zoneCostSource } from './zone-cost.js';

export const sourceDefs: ComponentDef<'source'>[] = [
  snapshotSource,
  deepLookupSource,
  serpSource,
  reviewsSource,
  datasetsSource,
  zoneCostSource,
  countriesSource,
  fileSource,
];
