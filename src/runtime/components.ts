/**
 * A pipeline's source, transforms and sinks, built from the explicit component lists through the registry: the
 * runtime knows components only by their contracts (core/types.ts), never by their type names.
 */
import type { ComponentDeps } from '../contracts/component.js';
import { SluiceError } from '../core/errors.js';
import { refuseShardedReplace } from '../core/sharded-replace.js';
import type { Sink, Source } from '../core/types.js';
import { findDef, registry as defaultRegistry, type Registry } from '../pipeline/registry.js';
import type { ShardId } from '../state/paths.js';
import type { BuiltTransform } from '../unit/unit-path.js';

export interface Built {
  source: Source;
  sourceType: string;
  /** The source reads local files only (its def says `offline`): no answer from the network to bound in time. */
  offline: boolean;
  transforms: BuiltTransform[];
  sinks: { type: string; config: SinkConfig; sink: Sink }[];
}

export type SinkConfig = { type: string; [k: string]: unknown };

export function sinkConfigs(config: { sink?: unknown; sinks?: unknown[] }): SinkConfig[] {
  const list = (config.sinks ?? (config.sink ? [config.sink] : [])) as SinkConfig[];
  if (list.length === 0) throw new SluiceError('the pipeline has no sink', { hint: 'add a `sink:` block' });
  return list;
}

/** Every sink's `write: replace` refused for a sharded run or a prepare (core/sharded-replace.ts). */
export function refuseShardedReplaceSinks(
  config: { sink?: unknown; sinks?: unknown[] },
  shard: ShardId | undefined,
): void {
  for (const c of sinkConfigs(config)) refuseShardedReplace(`${String(c.type)} sink`, c.write, shard);
}

/** `registry`: the components to build from (tests pass in-memory ones). Building opens nothing. */
export function buildComponents(config: any, deps: ComponentDeps, registry: Registry = defaultRegistry): Built {
  const transforms = ((config.transforms ?? []) as { type: string }[]).map((t) => ({
    type: t.type,
    fn: findDef('transform', t.type, registry).create(t, deps) as BuiltTransform['fn'],
  }));
  const sinks = sinkConfigs(config).map((c) => ({
    type: c.type,
    config: c,
    sink: findDef('sink', c.type, registry).create(c, deps) as Sink,
  }));
  const def = findDef('source', config.source.type, registry);
  const source = def.create(config.source, deps) as Source;
  return { source, sourceType: config.source.type, offline: def.offline === true, transforms, sinks };
}
