import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Sink } from '../../src/core/types.js';
import { sinkDefs } from '../../sinks/index.js';

/**
 * The least config of each sink: every option written here is required, and a sink registered without an entry
 * fails the first test.
 */
const MINIMAL: Record<string, Record<string, unknown>> = {
  duckdb: { path: 'out.duckdb', table: 't' },
  parquet: { path: 'out' },
  jsonl: { path: 'out' },
  postgres: { table: 't' },
  clickhouse: { table: 't' },
};

const types = sinkDefs.map((d) => d.type);
const defOf = (type: string) => sinkDefs.find((d) => d.type === type)!;
const silent = { debug() {}, info() {}, warn() {}, error() {} };

function built(type: string): { sink: Sink; dir: string; config: unknown } {
  const dir = mkdtempSync(path.join(tmpdir(), 'sluice-sink-def-'));
  const config = defOf(type).schema.parse({ type, ...MINIMAL[type] });
  const sink = defOf(type).create(config, {
    log: silent,
    baseDir: dir,
    client: () => Promise.reject(new Error('a sink never uses the service client')),
  }) as Sink;
  return { sink, dir, config };
}

describe('sinkDefs', () => {
  it('holds each sink once, each with a minimal config in this test', () => {
    expect(new Set(types).size).toBe(types.length);
    expect(new Set(sinkDefs).size).toBe(sinkDefs.length);
    expect([...types].sort()).toEqual(Object.keys(MINIMAL).sort());
    for (const d of sinkDefs) expect(d.kind, d.type).toBe('sink');
  });

  it.each(types)('%s: parses its minimal config, needs each option of it, refuses an unknown key', (type) => {
    const def = defOf(type);
    const minimal: Record<string, unknown> = { type, ...MINIMAL[type] };
    expect(def.schema.safeParse(minimal).error).toBeUndefined();
    for (const key of Object.keys(MINIMAL[type]!)) {
      const { [key]: _left, ...without } = minimal;
      expect(def.schema.safeParse(without).success, `${type} without ${key}`).toBe(false);
    }
    expect(def.schema.safeParse({ ...minimal, unknown_option: 1 }).success).toBe(false);
    expect(def.schema.safeParse({ ...minimal, type: 'other' }).success).toBe(false);
  });

  it.each(types)('%s: is built without touching its output, and names it', (type) => {
    const { sink, dir } = built(type);
    // Built to answer `--show`, `plan` or where shards meet: nothing is created before open().
    expect(readdirSync(dir)).toEqual([]);
    expect(sink.describe()).toMatch(new RegExp(`^${type} .*\\b(out|t)\\b`));
  });

  it.each(types)('%s: says its output is shared by shards exactly when it locks that output', (type) => {
    const { sink, dir, config } = built(type);
    const shared = defOf(type).sharedOutput?.(config, dir);
    expect(shared !== undefined, 'sharedOutput given').toBe(sink.capabilities.files !== undefined);
    if (!shared) return;
    expect(path.dirname(shared.prepared.location)).toBe(path.join(dir, 'out'));
    expect(path.dirname(shared.shardsRecord.location)).toBe(path.join(dir, 'out'));
    expect(shared.prepared.location).not.toBe(shared.shardsRecord.location);
    expect(shared.manifestName({ index: 1, count: 4 })).not.toBe(shared.manifestName({ index: 2, count: 4 }));
  });
});
