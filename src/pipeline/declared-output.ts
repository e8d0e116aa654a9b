/**
 * The columns a pipeline's rows have when they reach its sinks, as its transforms declare them (a normalizer
 * preset's, carried through the transforms after it): the sinks create every declared column from the first run,
 * with the declared type. Sources declare nothing, so a chain without a declaring transform gives undefined and
 * the sinks infer the columns from the data.
 */
import type { DeclaredSchema } from '../core/declared.js';
import { findDef, type Registry } from './registry.js';

/** `transformConfigs`: the pipeline's validated `transforms`, in order. */
export function declaredOutput(
  transformConfigs: readonly { type: string }[],
  registry?: Registry,
): DeclaredSchema | undefined {
  return declaredOrigin(transformConfigs, registry)?.declared;
}

/**
 * The declared columns and which transform declared them (the last one that changed the declaration, e.g. the
 * preset, or a `rename` after it), for messages about them.
 */
export function declaredOrigin(
  transformConfigs: readonly { type: string }[],
  registry?: Registry,
): { declared: DeclaredSchema; index: number } | undefined {
  let declared: DeclaredSchema | undefined;
  let index = -1;
  transformConfigs.forEach((config, i) => {
    const def = findDef('transform', config.type, registry);
    const next = def.declares ? def.declares(config, declared) : undefined;
    if (next !== declared) index = i;
    declared = next;
  });
  return declared && { declared, index };
}
