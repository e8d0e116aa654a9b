/** Every transform, listed explicitly: the pipeline registry and the generated docs read this list. */
import type { ComponentDef } from '../contracts/component.js';
import { castTransform } from './cast.js';
import { dedupeTransform } from './dedupe.js';
import { filterTransform } from './filter.js';
import { flattenTransform } from './flatten.js';
import { normalizeTransform } from './normalize.js';
import { renameTransform } from './rename.js';
import { selectTransform } from './select.js';

export const transformDefs: ComponentDef<'transform'>[] = [
  normalizeTransform,
  selectTransform,
  renameTransform,
  castTransform,
  flattenTransform,
  dedupeTransform,
  filterTransform,
];
