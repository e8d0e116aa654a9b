import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { DateOnly } from '../../src/core/values.js';
import { CASTERS, castSchema, castTransform } from '../../src/transforms/cast.js';
import { FAILED } from '../../src/transforms/coerce.js';
import { build, run } from './fixtures.js';

describe('cast', () => {
  it('converts each field to its type; null stays null; absent stays absent', async () => {
    const t = build(castTransform, {
      type: 'cast',
      fields: { n: 'int', d: 'double', s: 'text', b: 'bool', ts: 'timestamp', day: 'date', j: 'json', gone: 'int' },
    });
    const { rows, deadLetters } = await run(t, [
      { n: '1,234', d: '2.5', s: 42, b: 'yes', ts: '2025-01-02T03:04:05+02:00', day: '2025-02-28', j: '{"a":[1]}' },
      { n: null, d: 7, s: { k: 1 }, b: 0, ts: 1735689600000, day: '2025-03-01T23:00:00Z', j: [1, 2] },
    ]);
    expect(deadLetters).toEqual([]);
    expect(rows[0]).toEqual({
      n: 1234,
      d: 2.5,
      s: '42',
      b: true,
      ts: new Date('2025-01-02T01:04:05Z'),
      day: new DateOnly('2025-02-28'),
      j: { a: [1] },
    });
    expect(rows[1]).toEqual({
      n: null,
      d: 7,
      s: '{"k":1}',
      b: false,
      ts: new Date('2025-01-01T00:00:00Z'),
      day: new DateOnly('2025-03-01'),
      j: [1, 2],
    });
    expect(rows[1]).not.toHaveProperty('gone');
  });

  it('a value that does not convert sends the row to the dead letters with every reason', async () => {
    const t = build(castTransform, { type: 'cast', fields: { n: 'int', ts: 'timestamp' } });
    const { rows, deadLetters } = await run(
      t,
      [
        { id: 1, n: '12', ts: '2025-01-01' },
        { id: 2, n: '12.5', ts: 'next tuesday' },
        { id: 3, n: 'x', ts: null },
      ],
      { unitId: 'snapshot:s:part:1' },
    );
    expect(rows.map((r) => r.id)).toEqual([1]);
    expect(deadLetters).toHaveLength(2);
    expect(deadLetters[0]).toMatchObject({ unit: 'snapshot:s:part:1', stage: 'transform:cast' });
    expect(deadLetters[0]!.reason).toBe(
      'field `n`: cannot cast "12.5" to int; field `ts`: cannot cast "next tuesday" to timestamp',
    );
    expect(JSON.parse(deadLetters[0]!.raw!)).toEqual({ id: 2, n: '12.5', ts: 'next tuesday' });
    expect(deadLetters[1]!.reason).toBe('field `n`: cannot cast "x" to int');
  });

  it('on_error: null keeps the row with the field nulled', async () => {
    const t = build(castTransform, { type: 'cast', fields: { n: 'int', b: 'bool' }, on_error: 'null' });
    const { rows, deadLetters } = await run(t, [{ n: 'many', b: 'maybe', keep: 'yes' }]);
    expect(deadLetters).toEqual([]);
    expect(rows).toEqual([{ n: null, b: null, keep: 'yes' }]);
  });

  it('on_error: null written unquoted, as the README does (YAML reads it as null), means the same as "null"', async () => {
    const config = castSchema.parse(parseYaml('type: cast\nfields: { n: int }\non_error: null\n'));
    const t = build(castTransform, config);
    const { rows, deadLetters } = await run(t, [{ n: 'many' }]);
    expect(deadLetters).toEqual([]);
    expect(rows).toEqual([{ n: null }]);
  });

  it('edge cases of each type', () => {
    expect(CASTERS.int(true)).toBe(FAILED);
    expect(CASTERS.int('1,2,3')).toBe(FAILED);
    expect(CASTERS.int(2 ** 60)).toBe(FAILED);
    expect(CASTERS.int(' -7 ')).toBe(-7);
    expect(CASTERS.double('1e3')).toBe(1000);
    expect(CASTERS.double('')).toBe(FAILED);
    expect(CASTERS.bool(2)).toBe(FAILED);
    expect(CASTERS.bool('FALSE')).toBe(false);
    expect(CASTERS.text(new Date('2025-01-01T00:00:00Z'))).toBe('2025-01-01T00:00:00.000Z');
    expect(CASTERS.timestamp('2025-02-30')).toBe(FAILED);
    expect(CASTERS.timestamp('2025-01-01T10:00')).toEqual(new Date('2025-01-01T10:00:00Z'));
    expect(CASTERS.timestamp(new DateOnly('2025-01-05'))).toEqual(new Date('2025-01-05T00:00:00Z'));
    expect(CASTERS.date(new Date('2025-01-05T23:59:59Z'))).toEqual(new DateOnly('2025-01-05'));
    expect(CASTERS.date('05/01/2025')).toBe(FAILED);
    expect(CASTERS.json('{oops')).toBe(FAILED);
  });

  it('rejects unknown types', () => {
    const r = castSchema.safeParse({ type: 'cast', fields: { a: 'integer' } });
    expect(r.success).toBe(false);
  });
});
