/**
 * The JSONL sink's dataset: declared keys on every line, the columns committed units hold (`currentColumns`), the
 * changes a commit reports, and unit checkpoints kept with the commit.
 */
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { NO_CHECKPOINT } from '../../../src/core/checkpoint.js';
import { DateOnly } from '../../../src/core/values.js';
import type { DeclaredSchema } from '../../../src/core/declared.js';
import { BIGINT, DATE, DOUBLE, TIMESTAMP, VARCHAR, describeType, structOf } from '../../../src/core/logical-type.js';
import { jsonlSinkSchema } from '../../../sinks/jsonl/config.js';
import { JsonlSink } from '../../../sinks/jsonl/sink.js';
import type { Manifest } from '../../../src/sink-kit/output-files/manifest.js';
import { batches, removeTempDirs, sinkContext, tempDir, unit } from '../helpers.js';

afterAll(removeTempDirs);

let dir: string;
beforeEach(async () => {
  dir = await tempDir();
});

async function openSink(declared?: DeclaredSchema): Promise<JsonlSink> {
  const sink = new JsonlSink(jsonlSinkSchema.parse({ type: 'jsonl', path: 'out' }));
  await sink.open({ ...sinkContext(dir, { fresh: false }), ...(declared && { declared }) });
  return sink;
}

/** The lines of the files the manifest lists for a unit (published: after `finish()`). */
async function lines(unitName: string): Promise<string[]> {
  const m = JSON.parse(await readFile(path.join(dir, 'out', '_sluice_manifest.json'), 'utf8')) as Manifest;
  const files = m.units[`run1/${unitName}`]?.files ?? [];
  const texts = await Promise.all(files.map((f) => readFile(path.join(dir, 'out', f), 'utf8')));
  return texts.join('').trimEnd().split('\n');
}

const types = (m: ReadonlyMap<string, unknown> | undefined): Record<string, string> | undefined =>
  m && Object.fromEntries([...m].map(([k, t]) => [k, describeType(t as Parameters<typeof describeType>[0])]));

const declared: DeclaredSchema = [
  { name: 'id', type: BIGINT, nullable: false, description: 'id' },
  { name: 'at', type: TIMESTAMP, nullable: true, description: 'when' },
  { name: 'day', type: DATE, nullable: true, description: 'day' },
  { name: 'price', type: DOUBLE, nullable: true, description: 'price' },
  { name: 'info', type: structOf([['a', VARCHAR]]), nullable: true, description: 'nested' },
];

describe('jsonl sink: declared keys', () => {
  it('every line has exactly the declared keys, in order, null when absent, then the extra keys', async () => {
    const sink = await openSink(declared);
    await sink.writeUnit(
      unit('u1'),
      batches([
        { extra: 1, id: 1 },
        { id: 2, at: new Date('2024-01-02T03:04:05Z'), day: new DateOnly('2024-01-02'), price: 2, info: { a: 'x' } },
        { id: 3, at: undefined },
      ]),
      NO_CHECKPOINT,
    );
    await sink.finish();
    expect(await lines('u1')).toEqual([
      '{"id":1,"at":null,"day":null,"price":null,"info":null,"extra":1}',
      '{"id":2,"at":"2024-01-02T03:04:05.000Z","day":"2024-01-02","price":2,"info":{"a":"x"}}',
      '{"id":3,"at":null,"day":null,"price":null,"info":null}',
    ]);
    // The declared types, whatever the rows held (`price` was whole): the same columns as the other sinks.
    expect(types(await sink.currentColumns())).toEqual({
      id: 'BIGINT',
      at: 'TIMESTAMP',
      day: 'DATE',
      price: 'DOUBLE',
      info: 'STRUCT<{a: VARCHAR}>',
      extra: 'BIGINT',
    });
    await sink.close();
  });
});

describe('jsonl sink: columns as committed, changes, checkpoints', () => {
  it('currentColumns follows committed units, leaves out null-only columns, and survives a reopen', async () => {
    const sink = await openSink();
    expect(await sink.currentColumns()).toBeUndefined();
    await sink.writeUnit(unit('empty'), batches([]), NO_CHECKPOINT);
    expect(await sink.currentColumns()).toBeUndefined();
    await sink.writeUnit(
      unit('a'),
      batches([{ id: 1, none: null, at: '2024-01-02T03:04:05+02:00', s: { b: null } }]),
      NO_CHECKPOINT,
    );
    expect(types(await sink.currentColumns())).toEqual({ id: 'BIGINT', at: 'TIMESTAMP' });
    await sink.close();
    const reopened = await openSink();
    expect(types(await reopened.currentColumns())).toEqual({ id: 'BIGINT', at: 'TIMESTAMP' });
    await reopened.close();
  });

  it('reports added and widened columns in JSON type names, on the JS and the native path alike', async () => {
    const sink = await openSink();
    const first = await sink.writeUnit(unit('a'), batches([{ id: 1, v: 1, s: { a: 1 } }]), NO_CHECKPOINT);
    expect(first.schemaChanges).toBeUndefined();
    const r = await sink.writeUnit(
      unit('b'),
      batches([{ id: 2, v: 2.5, s: { a: 1, b: 'x' }, n: null }]),
      NO_CHECKPOINT,
    );
    expect(r.schemaChanges).toEqual([
      { column: 'v', change: 'widened', from: 'integer', to: 'number' },
      { column: 's.b', change: 'added', to: 'string' },
    ]);
    const raw = path.join(dir, 'raw.jsonl');
    await writeFile(raw, '{"id":3,"v":"text","n":true}\n');
    const native = await sink.capabilities.native!.load(
      unit('c'),
      { path: raw, decode: { format: 'jsonl' }, temporary: false },
      NO_CHECKPOINT,
    );
    expect(native.schemaChanges).toEqual([
      { column: 'v', change: 'widened', from: 'number', to: 'string' },
      { column: 'n', change: 'added', to: 'boolean' },
    ]);
    await sink.close();
  });
});
