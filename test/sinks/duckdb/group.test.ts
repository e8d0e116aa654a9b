/**
 * The duckdb sink's groups of units (sinks/duckdb/group.ts): native loads that arrive while others are on their way
 * commit in one transaction, each unit exactly once with its `_sluice_state` row; one unit whose file DuckDB's
 * reader refuses is refused alone and the others commit; a group that runs out of memory commits its units one at a
 * time, and every later unit too; a group ends once its rows leave row groups DuckDB's checkpoint keeps as they are.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { NO_CHECKPOINT } from '../../../src/core/checkpoint.js';
import { NativeLoadRefused } from '../../../src/core/errors.js';
import type { CommitResult } from '../../../src/core/types.js';
import { keepsRowGroups } from '../../../sinks/duckdb/group.js';
import type { DuckDBSink } from '../../../sinks/duckdb/sink.js';
import { armed } from '../../support/failpoints.js';
import { query, sinkContext, unit } from '../helpers.js';
import { duckdbSinkHarness } from './harness.js';

const h = duckdbSinkHarness('g.duckdb');

async function jsonl(name: string, text: string): Promise<string> {
  const file = path.join(h.dir, name);
  await writeFile(file, text);
  return file;
}

const rows = (from: number, n: number): string =>
  Array.from({ length: n }, (_, i) => JSON.stringify({ id: from + i, name: `n${from + i}` })).join('\n') + '\n';

/**
 * Loads `files` as units the way the engine does: each announced as on its way first (`expecting`), then loaded at
 * once. Resolves to each load's outcome.
 */
async function loadTogether(sink: DuckDBSink, files: string[]): Promise<PromiseSettledResult<CommitResult>[]> {
  const native = sink.capabilities.native!;
  const coming = files.map(() => native.expecting!());
  return Promise.allSettled(
    files.map(async (file, k) => {
      try {
        return await native.load(
          unit(`u${k}`),
          { path: file, decode: { format: 'jsonl' }, temporary: false },
          NO_CHECKPOINT,
          undefined,
          coming[k],
        );
      } finally {
        coming[k]!();
      }
    }),
  );
}

async function stateRows(): Promise<string[]> {
  const r = await query(`SELECT unit_id FROM _sluice_state ORDER BY unit_id`, h.db);
  return r.map((x) => String(x.unit_id));
}

describe('duckdb sink, units committed in groups', () => {
  it('units on their way together commit together, each once with its state row', async () => {
    // What another connection sees of the table while the last unit's rows are being inserted: nothing of the
    // others yet, for they commit with it.
    let seenBeforeLast: unknown;
    armed('duckdb:after-data', async ({ unit: id }) => {
      if (id === 'run1/u3') seenBeforeLast = await query('SELECT count(*)::INT AS n FROM t', h.db);
    });
    const sink = await h.openSink({}, sinkContext(h.dir));
    const files = await Promise.all([0, 1, 2, 3].map((k) => jsonl(`u${k}.jsonl`, rows(k * 100, 100))));
    const outcomes = await loadTogether(sink, files);
    expect(outcomes.map((o) => (o.status === 'fulfilled' ? o.value.records : o.reason))).toEqual([100, 100, 100, 100]);
    expect(await query('SELECT count(*)::INT AS n, count(DISTINCT id)::INT AS d FROM t', h.db)).toEqual([
      { n: 400, d: 400 },
    ]);
    expect(await stateRows()).toEqual(['run1/u0', 'run1/u1', 'run1/u2', 'run1/u3']);
    expect(seenBeforeLast).toEqual([{ n: 0 }]);
    // The same units again: committed already, nothing twice.
    const again = await loadTogether(sink, files);
    expect(again.map((o) => o.status === 'fulfilled' && o.value.committed)).toEqual([false, false, false, false]);
    expect(await query('SELECT count(*)::INT AS n FROM t', h.db)).toEqual([{ n: 400 }]);
  });

  it('a unit whose text DuckDB refuses is refused alone; the rest of its group commits', async () => {
    const sink = await h.openSink();
    const files = await Promise.all([
      jsonl('a.jsonl', rows(0, 50)),
      jsonl('b.jsonl', `${rows(50, 10)}{"id":60,"name":"x","name":"y"}\n`),
      jsonl('c.jsonl', rows(100, 50)),
    ]);
    const [a, b, c] = await loadTogether(sink, files);
    expect(a).toMatchObject({ status: 'fulfilled', value: { committed: true, records: 50 } });
    expect(b!.status).toBe('rejected');
    expect((b as PromiseRejectedResult).reason).toBeInstanceOf(NativeLoadRefused);
    expect(c).toMatchObject({ status: 'fulfilled', value: { committed: true, records: 50 } });
    expect(await query('SELECT count(*)::INT AS n FROM t', h.db)).toEqual([{ n: 100 }]);
    expect(await stateRows()).toEqual(['run1/u0', 'run1/u2']);
  });

  it('a group that runs out of memory: its units and every later one commit one at a time', async () => {
    const ctx = sinkContext(h.dir);
    let injected = 0;
    // The second unit of the first group meets DuckDB's refusal to allocate.
    armed('duckdb:after-data', ({ unit: id }) => {
      if (id === 'run1/u1' && injected++ === 0) throw new Error('Out of Memory Error: could not allocate block');
    });
    const sink = await h.openSink({}, ctx);
    const files = await Promise.all([0, 1, 2].map((k) => jsonl(`m${k}.jsonl`, rows(k * 10, 10))));
    const outcomes = await loadTogether(sink, files);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled']);
    expect(await query('SELECT count(*)::INT AS n, count(DISTINCT id)::INT AS d FROM t', h.db)).toEqual([
      { n: 30, d: 30 },
    ]);
    expect(await stateRows()).toEqual(['run1/u0', 'run1/u1', 'run1/u2']);
    expect(
      ctx.logs.filter((l) => /ran out of memory_limit 128MB; committing units one at a time/.test(l)),
    ).toHaveLength(1);
  });

  it('a group ends once its rows leave row groups the checkpoint keeps; the next unit starts another', async () => {
    // One unit of 100k rows is less than a row group; two leave a partial one of 77,120 rows, which no other partial
    // row group fits beside (a checkpoint rewrites adjacent row groups that fit into fewer); three, one of 54,240.
    expect([100_000, 200_000, 300_000, 240_000, 260_000].map(keepsRowGroups)).toEqual([
      false,
      true,
      false,
      true,
      false,
    ]);
    const seen: number[] = [];
    armed('duckdb:after-data', async () => {
      const [r] = await query('SELECT count(*)::INT AS n FROM t', h.db);
      seen.push(Number(r!.n));
    });
    const sink = await h.openSink();
    const files = await Promise.all([0, 1, 2].map((k) => jsonl(`r${k}.jsonl`, rows(k * 100_000, 100_000))));
    const outcomes = await loadTogether(sink, files);
    expect(outcomes.map((o) => (o.status === 'fulfilled' ? o.value.records : o.reason))).toEqual([
      100_000, 100_000, 100_000,
    ]);
    // Whichever two arrive first commit together; the third, in a transaction of its own, sees them committed.
    expect(seen).toEqual([0, 0, 200_000]);
    expect(await query('SELECT count(*)::INT AS n, count(DISTINCT id)::INT AS d FROM t', h.db)).toEqual([
      { n: 300_000, d: 300_000 },
    ]);
  });
});
