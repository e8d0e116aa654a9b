import { describe, expect, it } from 'vitest';
import type { ComponentDef } from '../../src/contracts/component.js';
import { buildComponents, refuseShardedReplaceSinks, sinkConfigs } from '../../src/runtime/components.js';
import type { Registry } from '../../src/pipeline/registry.js';
import { MemorySink, MemorySource, recordingLogger, tempDir } from '../support/in-memory.js';

describe('buildComponents', () => {
  const def = <K extends 'source' | 'transform' | 'sink'>(kind: K, type: string, create: (c: any) => unknown) =>
    ({ kind, type, description: type, schema: undefined as never, create }) as ComponentDef<K>;
  const registry: Registry = {
    source: [def('source', 'mem', () => new MemorySource([]))],
    transform: [def('transform', 'id', () => (b: unknown) => b)],
    sink: [def('sink', 'mem', (c: { name: string }) => new MemorySink(c.name))],
  };
  const deps = { log: recordingLogger(), baseDir: tempDir(), client: () => Promise.reject(new Error('no service')) };

  it('builds the source, the transforms and every sink, in the order of the pipeline file', () => {
    const built = buildComponents(
      {
        source: { type: 'mem' },
        transforms: [{ type: 'id' }, { type: 'id' }],
        sinks: [
          { type: 'mem', name: 'a' },
          { type: 'mem', name: 'b' },
        ],
      },
      deps,
      registry,
    );
    expect(built.sourceType).toBe('mem');
    expect(built.source).toBeInstanceOf(MemorySource);
    expect(built.transforms.map((t) => t.type)).toEqual(['id', 'id']);
    expect(built.sinks.map((s) => s.sink.describe())).toEqual(['memory a', 'memory b']);
  });

  it('names the registered types when a type is unknown', () => {
    expect(() =>
      buildComponents({ source: { type: 'nope' }, sink: { type: 'mem', name: 'a' } }, deps, registry),
    ).toThrow('unknown source type "nope"');
  });

  it('refuses a pipeline without a sink', () => {
    expect(() => sinkConfigs({})).toThrow('the pipeline has no sink');
    expect(sinkConfigs({ sink: { type: 'mem' } })).toEqual([{ type: 'mem' }]);
  });
});

describe('write: replace with shards', () => {
  const shard = { index: 1, count: 4 };
  const cases: [string, Record<string, unknown>][] = [
    ['postgres', { type: 'postgres', table: 't', write: 'replace' }],
    ['duckdb', { type: 'duckdb', path: 'w.duckdb', table: 't', write: 'replace' }],
    ['parquet', { type: 'parquet', path: 'out', write: 'replace' }],
  ];
  it.each(cases)('is refused for a %s sink, saying what to do instead', (type, sink) => {
    expect(() => refuseShardedReplaceSinks({ sinks: [{ type: 'jsonl', path: 'a' }, sink] }, shard)).toThrow(
      new RegExp(`^${type} sink: \`write: replace\` does not work with shards`),
    );
  });

  it('passes unsharded runs and the other write modes', () => {
    expect(() => refuseShardedReplaceSinks({ sink: { type: 'postgres', write: 'replace' } }, undefined)).not.toThrow();
    expect(() => refuseShardedReplaceSinks({ sink: { type: 'postgres', write: 'merge' } }, shard)).not.toThrow();
    expect(() => refuseShardedReplaceSinks({ sink: { type: 'duckdb', write: 'append' } }, shard)).not.toThrow();
  });
});
