import { describe, expect, it } from 'vitest';
import { SluiceError } from '../../src/core/errors.js';
import { allDefs, findDef, registry, registeredTypes } from '../../src/pipeline/registry.js';

describe('registry', () => {
  it('finds every registered component by kind and type', () => {
    for (const kind of ['source', 'transform', 'sink'] as const)
      for (const def of registry[kind]) expect(findDef(kind, def.type)).toBe(def);
    expect(findDef('source', 'serp').kind).toBe('source');
    expect(findDef('source', 'reviews').kind).toBe('source');
    expect(findDef('transform', 'normalize').kind).toBe('transform');
  });

  it('names the registered types when a type is unknown', () => {
    const err = (() => {
      try {
        findDef('transform', 'normalise');
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(SluiceError);
    expect((err as SluiceError).message).toBe('unknown transform type "normalise"');
    expect((err as SluiceError).hint).toBe(`registered transform types: ${registeredTypes('transform').join(', ')}`);
  });

  it('lists each type once per kind, sources first', () => {
    const defs = allDefs();
    expect(defs.length).toBe(registry.source.length + registry.transform.length + registry.sink.length);
    expect(defs[0]?.kind).toBe('source');
    for (const kind of ['source', 'transform', 'sink'] as const) {
      const types = registeredTypes(kind);
      expect(new Set(types).size).toBe(types.length);
      for (const def of registry[kind]) expect(def.kind).toBe(kind);
    }
  });
});
