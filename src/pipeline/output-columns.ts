/**
 * The columns the rows reaching a sink have, where the pipeline's transforms fix them statically; undefined where
 * they do not. Used to check merge keys (`primary_key`) when the pipeline is validated, before any request is made.
 *
 * Each transform's definition says what its config alone fixes (`outputColumns`), so this file names no transform:
 * `select` (not `exclude`) fixes a set; a `normalize` preset gives the columns it declares (the same declaration the
 * sinks create their columns from), all of the rows' columns or, for `company_profile`, some of them (`partial`);
 * `select` with `exclude`, `rename`, `cast`, `filter` and `dedupe` carry a known set through; anything else
 * (`flatten`, whose columns depend on the data; a source's own rows) makes the set unknown, and an unknown set is
 * never reported against.
 */
import type { KnownColumns } from '../contracts/component.js';
import { registry as defaultRegistry, type Registry } from './registry.js';
import type { ComponentConfig } from './schema.js';

export type { KnownColumns } from '../contracts/component.js';

/** The columns after the whole transform chain, or undefined when they cannot be known without the data. */
export function outputColumns(
  transforms: readonly ComponentConfig[],
  registry: Registry = defaultRegistry,
): KnownColumns | undefined {
  let known: KnownColumns | undefined;
  transforms.forEach((t, i) => {
    const def = registry.transform.find((d) => d.type === t.type);
    known = def?.outputColumns?.(t, known, `transforms[${i}]`);
  });
  return known;
}
