import { describe, expect, it } from 'vitest';
import { EXIT_CODES, SluiceError } from '../../src/core/errors.js';
import type { Batch, DeadLetter, Row, Sink, WorkUnit } from '../../src/core/types.js';
import { gated, SchemaContractError, type GateOptions } from '../../src/unit/schema-gate.js';
import { resolveContract, type SchemaContract, type SchemaContractOption } from '../../src/schema/contract.js';
import {
  BIGINT,
  DATE,
  DOUBLE,
  JSON_TYPE,
  NULL,
  TIMESTAMP,
  VARCHAR,
  kindName,
  listOf,
  structOf,
  type LogicalType,
} from '../../src/core/logical-type.js';
import { attempt, unitPath } from '../support/unit-path.js';
import { MemorySink, MemorySource } from '../support/in-memory.js';

async function* stream(...bs: Batch[]): AsyncIterable<Batch> {
  for (const b of bs) yield b;
}

async function drain(s: AsyncIterable<Batch>): Promise<Row[]> {
  const out: Row[] = [];
  for await (const b of s) out.push(...b);
  return out;
}

const namer = { describe: () => 'test sink', typeName: (t: LogicalType) => kindName(t) };

function gate(
  contract: SchemaContractOption,
  columns: [string, LogicalType][] | undefined,
  letters: DeadLetter[] = [],
) {
  const opts: GateOptions = {
    contract: resolveContract(undefined, contract),
    columns: columns && new Map(columns),
    sink: namer,
    unitId: 'u1',
    deadLetter: (d) => void letters.push(d),
  };
  return (s: AsyncIterable<Batch>) => gated(s, opts);
}

describe('schema-contract gate', () => {
  it('is no gate at all under evolve, or while nothing exists yet', () => {
    const s = stream([{ id: 1 }]);
    expect(gate('evolve', [['id', BIGINT]])(s)).toBe(s);
    expect(gate('freeze', undefined)(s)).toBe(s);
  });

  it('freeze: the stream ends in the refusal (a sink then commits nothing), naming every change of the unit and the fix', async () => {
    const g = gate('freeze', [
      ['id', BIGINT],
      ['v', BIGINT],
    ]);
    const out: Row[] = [];
    const err = await (async () => {
      for await (const b of g(stream([{ id: 1, v: 1 }], [{ id: 2, v: 'two' }], [{ id: 3, extra: true }])))
        out.push(...b);
    })().then(
      () => undefined,
      (e: unknown) => e,
    );
    // Batches before the first refused row went on (no unit is held in memory); nothing after it did.
    expect(out).toEqual([{ id: 1, v: 1 }]);
    expect(err).toBeInstanceOf(SchemaContractError);
    const e = err as SchemaContractError;
    expect(e.exitCode).toBe(EXIT_CODES.schemaContract);
    expect(e.changes.map((c) => `${c.kind} ${c.column}`)).toEqual(['type change v', 'new column extra']);
    expect(e.message).toContain('type change v: BIGINT → VARCHAR');
    expect(e.hint).toContain('schema_contract: evolve');
  });

  it('freeze refuses safe widenings too; the other modes let them through', async () => {
    const columns: [string, LogicalType][] = [
      ['n', BIGINT],
      ['d', DATE],
      ['open', NULL],
    ];
    const rows = [{ n: 1.5, d: '2024-01-02T03:04:05Z', open: 'now typed' }];
    await expect(drain(gate('freeze', columns)(stream(rows)))).rejects.toThrow(/widening n: BIGINT → DOUBLE/);
    for (const mode of ['discard_row', 'discard_value'] as const) {
      const letters: DeadLetter[] = [];
      expect(await drain(gate(mode, columns, letters)(stream(rows)))).toEqual(rows);
      expect(letters).toEqual([]);
    }
  });

  it('lets through what the columns hold: ISO text in TIMESTAMP, integers in DOUBLE, anything in JSON, nulls', async () => {
    const columns: [string, LogicalType][] = [
      ['at', TIMESTAMP],
      ['x', DOUBLE],
      ['j', JSON_TYPE],
      ['s', VARCHAR],
    ];
    const rows = [
      { at: '2024-01-02T03:04:05+02:00', x: 3, j: { any: [1] }, s: 'text' },
      { at: null, x: null, j: 'x', s: '2024-01-02', empty_list: [], empty_struct: {}, nothing: null },
    ];
    expect(await drain(gate('freeze', columns)(stream(rows)))).toEqual(rows);
  });

  it('discard_row: the row goes to dead letters, naming the sink, the column and the change', async () => {
    const letters: DeadLetter[] = [];
    const g = gate(
      'discard_row',
      [
        ['id', BIGINT],
        ['v', BIGINT],
      ],
      letters,
    );
    expect(
      await drain(
        g(
          stream([
            { id: 1, v: 'one' },
            { id: 2, v: 2 },
            { id: 3, v: 'three' },
          ]),
        ),
      ),
    ).toEqual([{ id: 2, v: 2 }]);
    expect(letters.map((d) => [d.stage, d.unit, d.reason, d.raw])).toEqual([
      [
        'sink:test sink',
        'u1',
        'row discarded by schema_contract: type change v: BIGINT → VARCHAR',
        '{"id":1,"v":"one"}',
      ],
      [
        'sink:test sink',
        'u1',
        'row discarded by schema_contract: type change v: BIGINT → VARCHAR',
        '{"id":3,"v":"three"}',
      ],
    ]);
    // Two letters with one reason stay two letters (the dead-letter file de-duplicates by ordinal).
    expect(letters.map((d) => (d as DeadLetter & { index: number }).index)).toEqual([0, 1]);
  });

  it('discard_value: new fields leave (also in every element of a list of structs), wrong values become null', async () => {
    const letters: DeadLetter[] = [];
    const columns: [string, LogicalType][] = [
      ['id', BIGINT],
      ['v', BIGINT],
      ['l', listOf(structOf([['a', BIGINT]]))],
    ];
    const row = { id: 1, v: 'x', l: [{ a: 1, b: 'new' }, { a: 2 }, { a: 3, b: 'newer' }], extra: 5 };
    const out = await drain(gate('discard_value', columns, letters)(stream([row])));
    expect(out).toEqual([{ id: 1, v: null, l: [{ a: 1 }, { a: 2 }, { a: 3 }] }]);
    // The source's row is not touched: another sink may read the same object.
    expect(row.l[0]).toEqual({ a: 1, b: 'new' });
    expect(letters.map((d) => [d.reason, d.raw])).toEqual([
      ['value discarded by schema_contract: type change v: BIGINT → VARCHAR', '"x"'],
      ['value discarded by schema_contract: new column l[].b (VARCHAR)', '"new"'],
      ['value discarded by schema_contract: new column l[].b (VARCHAR)', '"newer"'],
      ['value discarded by schema_contract: new column extra (BIGINT)', '5'],
    ]);
  });

  it('columns and types are decided apart: `{ columns: evolve, types: discard_row }`', async () => {
    const letters: DeadLetter[] = [];
    const g = gate({ columns: 'evolve', types: 'discard_row' }, [['s', structOf([['a', BIGINT]])]], letters);
    const rows = [{ s: { a: 1, b: 'new field' } }, { s: 'not a struct' }, { s: { a: 'text' } }];
    expect(await drain(g(stream(rows)))).toEqual([rows[0]]);
    expect(letters.map((d) => d.reason)).toEqual([
      'row discarded by schema_contract: type change s: STRUCT → JSON',
      'row discarded by schema_contract: type change s.a: BIGINT → VARCHAR',
    ]);
  });
});

describe('the unit path with contracts', () => {
  it('a sink under a contract other than evolve gets rows, never the raw file', async () => {
    const source = new MemorySource([{ id: 'u1', rows: [{ v: 1 }, { v: 'x' }] }], { rawFormat: 'jsonl' });
    const sink = new MemorySink('native', { nativeFormats: ['jsonl'] });
    const load = (contract: SchemaContractOption) =>
      unitPath(source, [sink], { contracts: new Map([[sink, resolveContract(contract, undefined)]]) }).path.load(
        { id: 'u1', params: {} },
        { id: `${String(contract)}/u1`, params: {} },
        [sink],
        attempt(),
      );
    await load('evolve');
    await load('discard_row');
    expect(sink.writes).toEqual([
      { id: 'evolve/u1', path: 'native' },
      { id: 'discard_row/u1', path: 'rows' },
    ]);
  });

  class ColumnsSink extends MemorySink {
    asked = 0;
    constructor(
      name: string,
      private readonly cols: Map<string, LogicalType> | undefined,
    ) {
      super(name);
    }
    override async currentColumns(): Promise<Map<string, LogicalType> | undefined> {
      this.asked++;
      return this.cols;
    }
  }

  it('asks an evolve sink nothing; a frozen sink fails with the refusal while the others still commit', async () => {
    const frozen = new ColumnsSink('frozen', new Map([['v', BIGINT]]));
    const free = new ColumnsSink('free', new Map([['v', BIGINT]]));
    // A sink that wraps what its input threw, as a sink's own error handling might.
    const wrapping = new ColumnsSink('wrapping', new Map([['v', BIGINT]]));
    const inner = wrapping.writeUnit.bind(wrapping);
    wrapping.writeUnit = (u, b, c) =>
      inner(u, b, c).catch((e: unknown) => {
        throw new SluiceError('wrapping sink: could not write', { cause: e });
      });
    const freeze = resolveContract(undefined, 'freeze');
    const commits: string[] = [];
    const source = new MemorySource([{ id: 'u1', rows: [{ v: 1 }, { v: 'x' }] }]);
    const sinks = [frozen, free, wrapping];
    const { path } = unitPath(source, sinks, {
      contracts: new Map<Sink, SchemaContract>([
        [frozen, freeze],
        [wrapping, freeze],
      ]),
      committed: (_u, s) => void commits.push(s.describe()),
    });
    const unit: WorkUnit = { id: 'u1', params: {} };
    const err = await path.load(unit, { id: 'r/u1', params: {} }, sinks, attempt()).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(SchemaContractError);
    expect(free.asked).toBe(0);
    expect(commits).toEqual(['memory free']);
    expect(free.rows.get('r/u1')).toEqual([{ v: 1 }, { v: 'x' }]);
    expect(frozen.rows.size + wrapping.rows.size).toBe(0);
  });
});
