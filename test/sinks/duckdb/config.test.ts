import { describe, expect, it } from 'vitest';
import { duckdbSinkSchema, tableNames } from '../../../sinks/duckdb/config.js';

describe('duckdb sink config', () => {
  it('merge without primary_key (or a key without merge) is a config error', () => {
    const r = duckdbSinkSchema.safeParse({ type: 'duckdb', path: 'x.duckdb', table: 't', write: 'merge' });
    expect(r.success).toBe(false);
    expect(r.error?.issues[0]).toMatchObject({
      path: ['primary_key'],
      message: expect.stringMatching(/needs `primary_key`/),
    });
    const r2 = duckdbSinkSchema.safeParse({ type: 'duckdb', path: 'x.duckdb', table: 't', primary_key: ['id'] });
    expect(r2.success).toBe(false);
    expect(duckdbSinkSchema.safeParse({ type: 'duckdb', path: 'x', table: 't', tabel: 'typo' }).success).toBe(false);
  });

  it('fills in the defaults', () => {
    expect(duckdbSinkSchema.parse({ type: 'duckdb', path: 'x.duckdb', table: 't' })).toEqual({
      type: 'duckdb',
      path: 'x.duckdb',
      table: 't',
      write: 'append',
      memory_limit: '128MB',
    });
    expect(duckdbSinkSchema.safeParse({ type: 'duckdb', path: 'x', table: 't', memory_limit: 'lots' }).success).toBe(
      false,
    );
  });
});

describe('tableNames', () => {
  const names = (over: object) =>
    tableNames(duckdbSinkSchema.parse({ type: 'duckdb', path: 'x', table: 't', ...over }));

  it('writes append and merge runs to the table itself, keyed by its name in main', () => {
    expect(names({})).toEqual({
      schema: 'main',
      table: 't',
      target: 't',
      stateKey: 't',
      targetStateKey: 't',
      lockKey: 'main.t',
    });
    expect(names({ write: 'merge', primary_key: ['id'] }).target).toBe('t');
  });

  it('writes a replace run to the next generation, with checkpoints of its own; other schemas qualify the key', () => {
    expect(names({ write: 'replace', schema: 'raw' })).toEqual({
      schema: 'raw',
      table: 't',
      target: 't__sluice_next',
      stateKey: 'raw.t',
      targetStateKey: 'raw.t__sluice_next',
      lockKey: 'raw.t',
    });
  });
});
