/**
 * The duckdb sink's part of issue 12 and 13: declared columns (a preset's), the columns it reports to the
 * schema-contract gate, the schema changes of a commit, and unit checkpoints stored with the unit's rows.
 */
import { DuckDBInstance } from '@duckdb/node-api';
import { describe, expect, it } from 'vitest';
import { knownCheckpoint, NO_CHECKPOINT } from '../../../src/core/checkpoint.js';
import type { UnitCommit, WorkUnit } from '../../../src/core/types.js';
import type { DeclaredSchema } from '../../../src/core/declared.js';
import { BIGINT, DOUBLE, TIMESTAMP, VARCHAR, describeType, listOf, structOf } from '../../../src/core/logical-type.js';
import type { DuckDBSinkConfig } from '../../../sinks/duckdb/config.js';
import { DuckDBSink } from '../../../sinks/duckdb/sink.js';
import { batches, columnTypes, query, sinkContext, unit } from '../helpers.js';
import { duckdbSinkHarness } from './harness.js';

const h = duckdbSinkHarness('w.duckdb');
const { closeAll } = h;

async function openSink(declared?: DeclaredSchema, over: Partial<DuckDBSinkConfig> = {}): Promise<DuckDBSink> {
  return h.openSink(over, { ...sinkContext(h.dir, { fresh: false }), ...(declared && { declared }) });
}

const declared: DeclaredSchema = [
  { name: 'id', type: BIGINT, nullable: false, description: 'id' },
  { name: 'rating', type: DOUBLE, nullable: true, description: 'a score, sometimes whole' },
  { name: 'registry_url', type: VARCHAR, nullable: true, description: 'null in most records' },
  { name: 'at', type: TIMESTAMP, nullable: true, description: 'when' },
  { name: 'funding', type: structOf([['amount', DOUBLE]]), nullable: true, description: 'nested' },
];

describe('duckdb sink: declared columns', () => {
  it('creates the table with every declared column at open, before any row, with the declared types', async () => {
    await openSink(declared);
    await closeAll();
    expect(await columnTypes('SELECT * FROM t', h.db)).toEqual({
      id: 'BIGINT',
      rating: 'DOUBLE',
      registry_url: 'VARCHAR',
      at: 'TIMESTAMP',
      funding: 'STRUCT(amount DOUBLE)',
    });
  });

  it('loads whole numbers and all-null columns with the declared types', async () => {
    const sink = await openSink(declared);
    await sink.writeUnit(
      unit('u1'),
      batches([{ id: 1, rating: 9, registry_url: null, funding: { amount: 5 } }]),
      NO_CHECKPOINT,
    );
    await closeAll();
    expect(await columnTypes('SELECT * FROM t', h.db)).toMatchObject({ rating: 'DOUBLE', registry_url: 'VARCHAR' });
    expect(await query('SELECT id, rating, registry_url FROM t', h.db)).toEqual([
      { id: 1, rating: 9, registry_url: null },
    ]);
  });

  it('keeps an empty list of a declared LIST column as [], not NULL', async () => {
    const sink = await openSink([
      { name: 'id', type: BIGINT, nullable: false, description: 'id' },
      { name: 'tags', type: listOf(VARCHAR), nullable: true, description: 'often empty' },
    ]);
    await sink.writeUnit(unit('u1'), batches([{ id: 1, tags: [] }, { id: 2 }]), NO_CHECKPOINT);
    await closeAll();
    expect(await query('SELECT id, tags FROM t ORDER BY id', h.db)).toEqual([
      { id: 1, tags: [] },
      { id: 2, tags: null },
    ]);
  });

  it('adds the declared columns an existing table lacks, and reports them with the first commit', async () => {
    const first = await openSink();
    await first.writeUnit(unit('u1'), batches([{ id: 1, rating: 4 }]), NO_CHECKPOINT);
    await closeAll();
    const sink = await openSink(declared);
    expect(await sink.currentColumns()).toBeDefined();
    const r = await sink.writeUnit(unit('u2'), batches([{ id: 2 }]), NO_CHECKPOINT);
    expect(r.schemaChanges).toEqual(
      expect.arrayContaining([
        { column: 'rating', change: 'widened', from: 'BIGINT', to: 'DOUBLE' },
        { column: 'registry_url', change: 'added', to: 'VARCHAR' },
      ]),
    );
    await closeAll();
    expect(await columnTypes('SELECT * FROM t', h.db)).toEqual({
      id: 'BIGINT',
      rating: 'DOUBLE',
      registry_url: 'VARCHAR',
      at: 'TIMESTAMP',
      funding: 'STRUCT(amount DOUBLE)',
    });
  });
});

describe('duckdb sink: columns and schema changes', () => {
  it('reports no columns before the table exists, then the committed ones', async () => {
    const sink = await openSink();
    expect(await sink.currentColumns()).toBeUndefined();
    await sink.writeUnit(unit('u1'), batches([{ id: 1, s: { a: 1 } }]), NO_CHECKPOINT);
    const cols = await sink.currentColumns();
    expect(new Map([...cols!].map(([k, t]) => [k, describeType(t)]))).toEqual(
      new Map([
        ['id', 'BIGINT'],
        ['s', 'STRUCT<{a: BIGINT}>'],
      ]),
    );
  });

  it("`replace`: before the new table exists, the live table's columns", async () => {
    const first = await openSink(undefined, { write: 'replace' });
    await first.writeUnit(unit('u1'), batches([{ id: 1 }]), NO_CHECKPOINT);
    await first.finish();
    await closeAll();
    const sink = await openSink(undefined, { write: 'replace' });
    expect([...(await sink.currentColumns())!.keys()]).toEqual(['id']);
  });

  it('names each added field and widened column, nested ones by path; a new table is no change', async () => {
    const sink = await openSink();
    const created = await sink.writeUnit(unit('u1'), batches([{ id: 1, s: { a: 1 }, l: [{ a: 1 }] }]), NO_CHECKPOINT);
    expect(created.schemaChanges).toBeUndefined();
    const r = await sink.writeUnit(
      unit('u2'),
      batches([{ id: 1.5, s: { a: 2, b: 'x' }, l: [{ a: 2, c: true }], extra: 'e' }]),
      NO_CHECKPOINT,
    );
    expect(r.schemaChanges).toEqual([
      { column: 'id', change: 'widened', from: 'BIGINT', to: 'DOUBLE' },
      { column: 's.b', change: 'added', to: 'VARCHAR' },
      { column: 'l[].c', change: 'added', to: 'BOOLEAN' },
      { column: 'extra', change: 'added', to: 'VARCHAR' },
    ]);
  });
});

describe('duckdb sink: unit checkpoints', () => {
  it('stores each unit checkpoint with the unit and gives them back after a reopen', async () => {
    const sink = await openSink();
    const u1: WorkUnit = unit('u1');
    const u2: WorkUnit = unit('u2');
    // Final only once the rows are drained, as the engine hands it over: asked for at commit time.
    let drained = false;
    const late: UnitCommit = {
      checkpoint: () => {
        if (!drained) throw new Error('asked for before the rows were drained');
        return 42;
      },
    };
    const batchesThenCheckpoint = async function* () {
      yield [{ id: 1 }];
      drained = true;
    };
    await sink.writeUnit(u1, batches([{ id: 1 }]), knownCheckpoint({ cursor: '2024-01-02T00:00:00Z', n: 3 }));
    await sink.writeUnit(u2, batchesThenCheckpoint(), late);
    await sink.writeUnit(unit('u3'), batches([{ id: 3 }]), NO_CHECKPOINT);
    await closeAll();
    const again = await openSink();
    expect(await again.committedCheckpoints()).toEqual(
      new Map<string, unknown>([
        [u1.id, { cursor: '2024-01-02T00:00:00Z', n: 3 }],
        [u2.id, 42],
      ]),
    );
  });

  it('adds the checkpoint column to a state table written before it existed', async () => {
    const inst = await DuckDBInstance.fromCache(h.db);
    const conn = await inst.connect();
    await conn.run(
      'CREATE TABLE main._sluice_state (pipeline VARCHAR NOT NULL, table_name VARCHAR NOT NULL, unit_id VARCHAR NOT NULL, records BIGINT NOT NULL, committed_at TIMESTAMP NOT NULL)',
    );
    await conn.run(`INSERT INTO main._sluice_state VALUES ('test', 't', 'old', 0, now()::TIMESTAMP)`);
    conn.closeSync();
    const sink = await openSink();
    await sink.writeUnit(unit('new'), batches([{ id: 1 }]), knownCheckpoint(['a']));
    expect(await sink.committedUnits()).toEqual(new Set(['old', unit('new').id]));
    expect(await sink.committedCheckpoints()).toEqual(new Map([[unit('new').id, ['a']]]));
  });
});
