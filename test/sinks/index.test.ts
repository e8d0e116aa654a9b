import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { sinkDefs } from '../../sinks/index.js';

/** The least config of each sink: file sinks write to a path, database sinks to a table. */
function minimalConfig(type: string): Record<string, unknown> {
  if (type === 'postgres') return { type, table: 't' };
  return { type, path: 'x', ...(type === 'duckdb' ? { table: 't' } : {}) };
}

describe('sink registry', () => {
  it('lists duckdb, parquet, jsonl and postgres, each with a strict, fully described config schema', () => {
    expect(sinkDefs.map((d) => [d.kind, d.type])).toEqual([
      ['sink', 'duckdb'],
      ['sink', 'parquet'],
      ['sink', 'jsonl'],
      ['sink', 'postgres'],
    ]);
    for (const def of sinkDefs) {
      expect(def.schema).toBeInstanceOf(z.ZodObject);
      const shape = (def.schema as z.ZodObject).shape;
      for (const [key, field] of Object.entries(shape)) {
        if (key === 'type') continue;
        expect((field as z.ZodType).description, `${def.type}.${key}`).toBeTruthy();
      }
      const minimal = minimalConfig(def.type);
      expect(def.schema.safeParse(minimal).success, def.type).toBe(true);
      expect(def.schema.safeParse({ ...minimal, unknown_option: 1 }).success, def.type).toBe(false);
    }
  });

  it('creates sinks from parsed configs', () => {
    for (const def of sinkDefs) {
      const minimal = minimalConfig(def.type);
      const sink = def.create(def.schema.parse(minimal), {
        log: { debug() {}, info() {}, warn() {}, error() {} },
        baseDir: '.',
        client: () => Promise.reject(new Error('no client')),
      }) as { open: unknown; writeUnit: unknown; finish: unknown };
      expect(typeof sink.open).toBe('function');
      expect(typeof sink.writeUnit).toBe('function');
    }
  });
});
