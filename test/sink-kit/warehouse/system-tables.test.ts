/**
 * The SQL sinks' shared account of an attempt (src/sink-kit/warehouse/system-tables.ts): which attempts get a row in
 * `_sluice_runs`, with what status, and that failing to write it only warns. The rows themselves are checked in real
 * databases by test/e2e/runs.test.ts (DuckDB) and the postgres sink's tests.
 */
import { describe, expect, it } from 'vitest';
import { AttemptLoad, recordAttempt, systemTableSql } from '../../../src/sink-kit/warehouse/system-tables.js';
import { sinkContext } from '../../sinks/helpers.js';

const TYPES = { text: 'T', integer: 'I', bigint: 'B', timestamp: 'TS', json: 'J' };

describe('an attempt in _sluice_runs', () => {
  it('is recorded only when it committed a unit or finished the run, counting what it committed', async () => {
    const ctx = { ...sinkContext('/nowhere', { pipeline: 'p' }), runId: 'r1' };
    const load = new AttemptLoad();
    const written: (string | number)[][] = [];
    const write = async (v: (string | number)[]) => void written.push(v);
    await recordAttempt(ctx, load, 'tbl', 'sink', write);
    expect(written).toEqual([]);
    load.committed({ committed: false, records: 0 });
    load.committed({ committed: true, records: 3 });
    await recordAttempt(ctx, load, 'tbl', 'sink', write);
    load.finished = true;
    await recordAttempt(ctx, load, 'tbl', 'sink', write);
    expect(written.map((v) => v.slice(0, 6))).toEqual([
      ['p', 'tbl', 'r1', 'incomplete', 1, 3],
      ['p', 'tbl', 'r1', 'complete', 1, 3],
    ]);
    expect(new Date(written[0]![6] as string).getTime()).toBe(load.openedAt.getTime());
  });

  it('is not recorded without a run id, and a failure to write it only warns', async () => {
    const load = new AttemptLoad();
    load.finished = true;
    const noRun = sinkContext('/nowhere');
    await recordAttempt(noRun, load, 'tbl', 'sink', () => Promise.reject(new Error('never called')));
    expect(noRun.logs).toEqual([]);
    const ctx = { ...sinkContext('/nowhere'), runId: 'r1' };
    await recordAttempt(ctx, load, 'tbl', 'sink', () => Promise.reject(new Error('disk full\nmore')));
    expect(ctx.logs).toEqual(['warn: sink: could not record the run in _sluice_runs: disk full']);
  });
});

describe('the system tables', () => {
  it('give _sluice_state a key (and committed_at a default) only where the dialect asks for them', () => {
    const keyed = systemTableSql(TYPES, { state: 's', runs: 'r' }, { startedAt: '$7', now: 'now()', stateKey: true });
    expect(keyed.createState).toContain('committed_at TS NOT NULL DEFAULT now()');
    expect(keyed.createState).toContain('PRIMARY KEY (pipeline, table_name, unit_id)');
    const plain = systemTableSql(TYPES, { state: 's', runs: 'r' }, { startedAt: '$7', now: 'now()', stateKey: false });
    expect(plain.createState).not.toContain('PRIMARY KEY');
    expect(plain.createRuns).toContain('PRIMARY KEY (pipeline, table_name, run_id)');
    expect(plain.upsertRun).toContain('attempts = r.attempts + 1');
  });
});
