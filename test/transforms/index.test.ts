import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { transformDefs } from '../../src/transforms/index.js';

/** The object schema behind a def, for checking each field's docs. */
function shapeOf(schema: z.ZodType): Record<string, z.ZodType> {
  const s = schema as unknown as { shape?: Record<string, z.ZodType> };
  if (!s.shape) throw new Error('transform schemas are z.object(...)');
  return s.shape;
}

describe('transformDefs', () => {
  it('lists every transform once', () => {
    const types = transformDefs.map((d) => d.type);
    expect(new Set(types).size).toBe(types.length);
    expect(types.sort()).toEqual(['cast', 'dedupe', 'filter', 'flatten', 'normalize', 'rename', 'select']);
    for (const d of transformDefs) expect(d.kind).toBe('transform');
  });

  it('every config field but `type` is documented, and each schema converts to JSON Schema', () => {
    for (const d of transformDefs) {
      const shape = shapeOf(d.schema);
      expect(shape.type, d.type).toBeDefined();
      for (const [name, field] of Object.entries(shape)) {
        if (name === 'type') continue;
        expect(field.description, `${d.type}.${name}`).toBeTruthy();
      }
      const json = z.toJSONSchema(d.schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
      expect(json.type, d.type).toBe('object');
      expect(d.description.length).toBeGreaterThan(10);
    }
  });

  it('rejects unknown keys (strict), so typos are caught', () => {
    for (const d of transformDefs) expect(d.schema.safeParse({ type: d.type, tpyo: 1 }).success, d.type).toBe(false);
  });
});
