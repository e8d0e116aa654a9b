/**
 * A pipeline over in-memory components (test/support/in-memory.ts) for runPipeline tests: a registry whose `memory`
 * source and sinks are fixed instances (so they outlive a run like real outputs do), and a `reject-odd` transform
 * that dead-letters every record with an odd `id`.
 */
import path from 'node:path';
import type { ComponentDef } from '../../src/contracts/component.js';
import type { Batch, TransformContext } from '../../src/core/types.js';
import type { LoadedPipeline } from '../../src/pipeline/load.js';
import type { Registry } from '../../src/pipeline/registry.js';
import { MemorySink, MemorySource, tempDir, type MemorySinkOptions } from './in-memory.js';

export const quiet = { fresh: false, logFormat: 'text', quiet: true, progress: false } as const;

function rejectOdd(batches: AsyncIterable<Batch>, ctx: TransformContext): AsyncIterable<Batch> {
  return (async function* () {
    for await (const b of batches)
      yield b.filter((r) => {
        const keep = (r.id as number) % 2 === 0;
        if (!keep)
          ctx.deadLetter({
            unit: ctx.unitId,
            stage: 'transform:reject-odd',
            reason: (r.why as string | undefined) ?? 'odd id',
            raw: JSON.stringify(r),
          });
        return keep;
      });
  })();
}

export function memoryPipeline(source: MemorySource, sinks: Record<string, MemorySinkOptions>) {
  const built = new Map(Object.entries(sinks).map(([name, o]) => [name, new MemorySink(name, o)]));
  const def = <K extends 'source' | 'transform' | 'sink'>(kind: K, type: string, create: (c: any) => unknown) =>
    ({ kind, type, description: type, schema: undefined as never, create }) as ComponentDef<K>;
  let current = source;
  const registry: Registry = {
    source: [def('source', 'memory', () => current)],
    sink: [def('sink', 'memory', (c: { name: string }) => built.get(c.name))],
    transform: [def('transform', 'reject-odd', () => rejectOdd)],
  };
  const dir = tempDir();
  const pipeline = (extra: Record<string, unknown> = {}): LoadedPipeline =>
    ({
      file: path.join(dir, 'p.yaml'),
      baseDir: dir,
      name: 'mem',
      config: {
        version: 1,
        name: 'mem',
        service: { base_url: 'emulator', api_key: 'memory-key' },
        source: { type: 'memory' },
        transforms: [{ type: 'reject-odd' }],
        sinks: Object.keys(sinks).map((name) => ({ type: 'memory', name })),
        ...extra,
      },
    }) as unknown as LoadedPipeline;
  return {
    registry,
    sinks: built,
    pipeline,
    dir,
    /** The next runs read this source instead (a fixed upstream, or a new night's data). */
    useSource: (s: MemorySource) => void (current = s),
  };
}
