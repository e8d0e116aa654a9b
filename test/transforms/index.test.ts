import { describe, expect, it } from 'vitest';
import type { ComponentDef } from '../../src/contracts/component.js';
import type { Row, Transform } from '../../src/core/types.js';
import { transformDefs } from '../../src/transforms/index.js';
import { build, run } from './fixtures.js';

/**
 * The least config of each transform, and an input row it keeps: every option written here is required, and a
 * transform registered without an entry fails the first test.
 */
const MINIMAL: Record<string, { config: Record<string, unknown>; input: Row }> = {
  cast: { config: { fields: { n: 'int' } }, input: { n: '1', s: 'x' } },
  dedupe: { config: { key: ['id'] }, input: { id: 1, s: 'x' } },
  filter: { config: { field: 'n', op: '=', value: 1 }, input: { n: 1, s: 'x' } },
  flatten: { config: {}, input: { a: { b: 1 }, s: 'x' } },
  normalize: {
    config: { preset: 'serp_organic' },
    input: { organic: [{ link: 'https://example.com/', title: 'a result' }] },
  },
  rename: { config: { fields: { s: 't' } }, input: { n: 1, s: 'x' } },
  select: { config: { fields: ['n'] }, input: { n: 1, s: 'x' } },
};

const types = transformDefs.map((d) => d.type);

describe('transformDefs', () => {
  it('holds each transform once, each with a minimal config in this test', () => {
    expect(new Set(types).size).toBe(types.length);
    expect(new Set(transformDefs).size).toBe(transformDefs.length);
    expect([...types].sort()).toEqual(Object.keys(MINIMAL).sort());
    for (const d of transformDefs) expect(d.kind, d.type).toBe('transform');
  });

  it.each(types)('%s: parses its minimal config, needs each option of it, refuses an unknown key', (type) => {
    const def = transformDefs.find((d) => d.type === type)!;
    const minimal: Record<string, unknown> = { type, ...MINIMAL[type]!.config };
    expect(def.schema.safeParse(minimal).error).toBeUndefined();
    for (const key of Object.keys(MINIMAL[type]!.config)) {
      const { [key]: _left, ...without } = minimal;
      expect(def.schema.safeParse(without).success, `${type} without ${key}`).toBe(false);
    }
    expect(def.schema.safeParse({ ...minimal, tpyo: 1 }).success).toBe(false);
    expect(def.schema.safeParse({ ...minimal, type: 'other' }).success).toBe(false);
  });

  it.each(types)('%s: the output columns its definition claims are the columns of the rows it yields', async (type) => {
    const def = transformDefs.find((d) => d.type === type)!;
    const { config, input } = MINIMAL[type]!;
    const parsed = def.schema.parse({ type, ...config });
    const claimed = def.outputColumns?.(parsed, { columns: Object.keys(input), from: 'the input' }, 'transforms[0]');
    const { rows } = await run(build(def as ComponentDef<'transform', unknown, Transform>, { type, ...config }), [
      structuredClone(input),
    ]);
    expect(rows.length, 'the probe row is kept').toBeGreaterThan(0);
    if (claimed === undefined) return; // unknown without the data (flatten): never reported against
    for (const row of rows) expect(Object.keys(row).sort()).toEqual([...claimed.columns].sort());
  });
});
