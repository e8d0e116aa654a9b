import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { describeSink } from '../../src/engine/components.js';

describe('describeSink', () => {
  it('shows where a sink writes as typed from the current directory', () => {
    const cwd = process.cwd();
    const pipelines = path.join(cwd, 'pipelines');
    expect(describeSink({ type: 'duckdb', path: '../out/w.duckdb', table: 't' }, pipelines)).toBe(
      `duckdb ${path.join('out', 'w.duckdb')} table t`,
    );
    expect(describeSink({ type: 'jsonl', path: 'out' }, pipelines)).toBe(`jsonl ${path.join('pipelines', 'out')}`);
    expect(describeSink({ type: 'parquet', path: '.' }, cwd)).toBe('parquet .');
  });

  it('shows a path outside the current directory in full, and the configured text without a base', () => {
    const elsewhere = path.resolve(process.cwd(), '..', 'elsewhere');
    expect(describeSink({ type: 'parquet', path: 'pq' }, elsewhere)).toBe(`parquet ${path.join(elsewhere, 'pq')}`);
    expect(describeSink({ type: 'parquet', path: '../pq' })).toBe('parquet ../pq');
  });
});
