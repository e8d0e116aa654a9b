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
  let declared: DeclaredSchema | undefined;
  for (const config of transformConfigs) {
    const def = findDef('transform', config.type, registry);
    declared = def.declares ? def.declares(config, declared) : undefined;
  }
  return declared;
}
