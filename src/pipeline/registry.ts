/**
 * The component registry: the explicit lists of sources, transforms and sinks, looked up by `type`.
 * Nothing registers itself on import; adding a component means adding it to its kind's list.
 */
import type { ComponentDef } from '../contracts/component.js';
import { SluiceError } from '../core/errors.js';
import { sourceDefs } from '../sources/index.js';
import { transformDefs } from '../transforms/index.js';
import { sinkDefs } from '../../sinks/index.js';

export type ComponentKind = 'source' | 'transform' | 'sink';

export interface Registry {
  source: ComponentDef<'source'>[];
  transform: ComponentDef<'transform'>[];
  sink: ComponentDef<'sink'>[];
}

export const registry: Registry = { source: sourceDefs, transform: transformDefs, sink: sinkDefs };

export function registeredTypes(kind: ComponentKind, reg: Registry = registry): string[] {
  return reg[kind].map((d) => d.type);
}

export function findDef<K extends ComponentKind>(kind: K, type: string, reg: Registry = registry): ComponentDef<K> {
  const def = (reg[kind] as ComponentDef<K>[]).find((d) => d.type === type);
  if (def === undefined)
    throw new SluiceError(`unknown ${kind} type "${type}"`, {
      hint: `registered ${kind} types: ${registeredTypes(kind, reg).join(', ')}`,
    });
  return def;
}

/** Every component, sources first, in registry order (the order of the docs and the JSON Schema). */
export function allDefs(reg: Registry = registry): ComponentDef<ComponentKind>[] {
  return [...reg.source, ...reg.transform, ...reg.sink];
}
