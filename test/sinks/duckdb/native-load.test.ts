/**
 * The duckdb sink's native file path (`writeUnitFile`): the JS pass that proves `read_json` with explicit columns
 * keeps every key and value, the staging of gzip input as plain text, read buffers sized to the data, and one
 * load at a time per database file.
 */
import { readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { NO_CHECKPOINT } from '../../../src/core/checkpoint.js';
import type { DuckDBSinkConfig } from '../../../sinks/duckdb/config.js';
import { DuckDBSink } from '../../../sinks/duckdb/sink.js';
import { NativeLoadRefused } from '../../../src/core/errors.js';
import { batches, columnTypes, query, sinkContext, unit } from '../helpers.js';
import { duckdbSinkHarness } from './harness.js';
import { armed } from '../../support/failpoints.js';

const h = duckdbSinkHarness('w.duckdb');

const openSink = (over: Partial<DuckDBSinkConfig> = {}): Promise<DuckDBSink> => h.openSink(over, sinkContext(h.dir));

async function jsonlFile(name: string, rows: unknown[], gzip: boolean, eol = '\n'): Promise<string> {
  const file = path.join(h.dir, name);
  const text = rows.map((r) => JSON.stringify(r)).join(eol) + eol;
  await writeFile(file, gzip ? gzipSync(text) : text);
  return file;
}

const load = (sink: DuckDBSink, id: string, file: string) =>
  sink.capabilities.native!.load(
    unit(id),
    { path: file, decode: { format: 'jsonl' }, temporary: false },
    NO_CHECKPOINT,
  );

describe('duckdb sink, native file loads', () => {
  it('keeps keys and values that only the last of thousands of lines has, nested ones too', async () => {
    // read_json with explicit columns would drop `late`, `s.extra` and `l[].z` and round 2.5 to 3: the schema must
    // come from every row, not from a sample.
    const rows: Record<string, unknown>[] = Array.from({ length: 5000 }, (_, i) => ({
      id: i,
      n: i,
      s: { a: 'x' },
      l: [{ y: i }],
    }));
    rows.push({ id: 5000, n: 2.5, s: { a: 'y', extra: true }, l: [{ y: 1, z: 'deep' }], late: 'kept' });
    const sink = await openSink();
    expect(await load(sink, 'u', await jsonlFile('u.jsonl.gz', rows, true))).toEqual({
      committed: true,
      records: 5001,
    });
    expect(await columnTypes('SELECT * FROM t', h.db)).toEqual({
      id: 'BIGINT',
      n: 'DOUBLE',
      s: 'STRUCT(a VARCHAR, extra BOOLEAN)',
      l: 'STRUCT(y BIGINT, z VARCHAR)[]',
      late: 'VARCHAR',
    });
    expect(await query('SELECT n, s, l, late FROM t WHERE id = 5000', h.db)).toEqual([
      { n: 2.5, s: { a: 'y', extra: true }, l: [{ y: 1, z: 'deep' }], late: 'kept' },
    ]);
  });

  it('decompresses gzip into a staging file that is gone after the commit and after a failure', async () => {
    const staging = `${h.db}.sluice-tmp`;
    armed('duckdb:after-data', ({ unit: id }) => failOn(id!, 'run1/bad'));
    const sink = await openSink();
    await load(sink, 'ok', await jsonlFile('ok.jsonl.gz', [{ id: 1 }], true));
    expect(await readdir(staging)).toEqual([]);
    const failed = await load(sink, 'bad', await jsonlFile('bad.jsonl.gz', [{ id: 2 }], true)).catch((e: unknown) => e);
    // A failure of the load is the unit's failure, not a refusal of the file.
    expect((failed as Error).message).toMatch(/injected/);
    expect(failed).not.toBeInstanceOf(NativeLoadRefused);
    expect(await readdir(staging)).toEqual([]);
    expect(await query('SELECT id FROM t', h.db)).toEqual([{ id: 1 }]);
  });

  it('leaves no staging directory behind once the last sink on the file closes', async () => {
    const staging = `${h.db}.sluice-tmp`;
    const first = await openSink();
    const second = await openSink({ table: 't2' });
    await load(first, 'a', await jsonlFile('a.jsonl.gz', [{ id: 1 }], true));
    await first.close();
    // The other sink on the file still stages, even though the first one removed the empty directory.
    expect(await load(second, 'b', await jsonlFile('b.jsonl.gz', [{ id: 2 }], true))).toEqual({
      committed: true,
      records: 1,
    });
    await second.close();
    h.opened.splice(0);
    await expect(readdir(staging)).rejects.toThrow(/ENOENT/);
    expect(await query('SELECT id FROM t2', h.db)).toEqual([{ id: 2 }]);
  });

  it('loads plain files in place, skipping blank lines and CRLF endings', async () => {
    const file = path.join(h.dir, 'crlf.jsonl');
    await writeFile(file, '{"id":1}\r\n\r\n   \n{"id":2}\r\n');
    const sink = await openSink();
    expect(await load(sink, 'u', file)).toEqual({ committed: true, records: 2 });
    expect(await readdir(`${h.db}.sluice-tmp`)).toEqual([]);
    expect(await query('SELECT id FROM t ORDER BY id', h.db)).toEqual([{ id: 1 }, { id: 2 }]);
  });

  it('refuses a bad line with its byte offset, also past chunk boundaries, committing nothing', async () => {
    // Lines of ~1 KB: the bad one starts well past the first 64 KiB chunk, and some line straddles each boundary.
    const good = Array.from({ length: 300 }, (_, i) => JSON.stringify({ id: i, pad: 'p'.repeat(1000 + (i % 7)) }));
    const prefix = good.join('\n') + '\n';
    const sink = await openSink();
    const file = path.join(h.dir, 'bad.jsonl.gz');
    await writeFile(file, gzipSync(prefix + '{"id": 300, oops}\n{"id":301}\n'));
    await expect(load(sink, 'u', file)).rejects.toThrow(NativeLoadRefused);
    await expect(load(sink, 'u', file)).rejects.toThrow(`not JSON at byte ${Buffer.byteLength(prefix)}`);
    await writeFile(file, gzipSync(prefix + '[1, 2]\n'));
    await expect(load(sink, 'u', file)).rejects.toThrow(
      `line at byte ${Buffer.byteLength(prefix)} is not a JSON object`,
    );
    expect(await sink.committedUnits()).toEqual(new Set());
    expect(await readdir(`${h.db}.sluice-tmp`)).toEqual([]);
  });

  it('refuses a file holding a record the store cannot hold (the engine’s judge), or one read_json refuses', async () => {
    const sink = await openSink();
    const prefix = `${JSON.stringify({ id: 1, Name: 'a' })}\n`;
    const file = path.join(h.dir, 'hostile.jsonl');
    await writeFile(file, `${prefix}${JSON.stringify({ id: 2, name: 'b' })}\n`);
    const refusal = load(sink, 'u', file);
    await expect(refusal).rejects.toThrow(NativeLoadRefused);
    await expect(refusal).rejects.toThrow(
      `the record at byte ${prefix.length}: key "name" differs only in case from "Name": DuckDB names ignore case`,
    );
    // A key twice in one object: JSON.parse takes the last, read_json refuses the object; the JS path stores the last.
    await writeFile(file, '{"id":3,"d":1,"d":2}\n');
    await expect(load(sink, 'u', file)).rejects.toThrow(/read_json refused it: .*duplicate key "d"/);
    expect(await sink.committedUnits()).toEqual(new Set());
  });

  it('refuses gzip that does not decompress, and fails (without refusing) on a file it cannot open', async () => {
    const sink = await openSink();
    const good = gzipSync('{"id":1}\n'.repeat(100));
    const cut = path.join(h.dir, 'cut.jsonl.gz');
    await writeFile(cut, good.subarray(0, good.length - 8));
    const refused = await load(sink, 'u', cut).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(NativeLoadRefused);
    const missing = await load(sink, 'u', path.join(h.dir, 'missing.jsonl')).catch((e: unknown) => e);
    expect(missing).toMatchObject({ code: 'ENOENT' });
    expect(missing).not.toBeInstanceOf(NativeLoadRefused);
    expect(await sink.committedUnits()).toEqual(new Set());
    expect(await readdir(`${h.db}.sluice-tmp`)).toEqual([]);
  });

  it('parses text DuckDB reads as a timestamp into an existing TIMESTAMP column, nested too; other text widens it', async () => {
    const sink = await openSink();
    await load(
      sink,
      'a',
      await jsonlFile('a.jsonl', [{ id: 1, at: '2024-01-01T00:00:00Z', s: { at: '2024-01-01T00:00:00Z' } }], false),
    );
    expect(await columnTypes('SELECT "at", s FROM t', h.db)).toEqual({ at: 'TIMESTAMP', s: 'STRUCT("at" TIMESTAMP)' });
    // Text sluice's ISO check does not take for a timestamp, but DuckDB parses: the columns keep their type.
    await load(
      sink,
      'b',
      await jsonlFile('b.jsonl', [{ id: 2, at: '2024-01-02T03:04:05 UTC', s: { at: '2024-01-02T24:00:00' } }], false),
    );
    expect(await columnTypes('SELECT "at", s FROM t', h.db)).toEqual({ at: 'TIMESTAMP', s: 'STRUCT("at" TIMESTAMP)' });
    expect(await query('SELECT id, "at", s FROM t ORDER BY id', h.db)).toEqual([
      { id: 1, at: '2024-01-01T00:00:00.000Z', s: { at: '2024-01-01T00:00:00.000Z' } },
      { id: 2, at: '2024-01-02T03:04:05.000Z', s: { at: '2024-01-03T00:00:00.000Z' } },
    ]);
    // Text DuckDB cannot read as a timestamp widens only the column that holds it.
    await load(
      sink,
      'c',
      await jsonlFile('c.jsonl', [{ id: 3, at: '2024-01-03T00:00:00Z', s: { at: 'soon' } }], false),
    );
    expect(await columnTypes('SELECT "at", s FROM t', h.db)).toEqual({ at: 'TIMESTAMP', s: 'STRUCT("at" VARCHAR)' });
    expect(await query('SELECT count(*) AS n FROM t', h.db)).toEqual([{ n: 3 }]);
  });

  it('checks text against list elements of an existing table the same way', async () => {
    const sink = await openSink();
    await sink.writeUnit(unit('a'), batches([{ id: 1, l: [{ d: new Date('2024-01-01T00:00:00Z') }] }]), NO_CHECKPOINT);
    await sink.writeUnit(
      unit('b'),
      batches([
        { id: 2, l: [{ d: '2024-01-02T00:00:00Z' }, { d: null }] },
        { id: 3, l: [] },
      ]),
      NO_CHECKPOINT,
    );
    expect(await columnTypes('SELECT l FROM t', h.db)).toEqual({ l: 'STRUCT(d TIMESTAMP)[]' });
    await sink.writeUnit(unit('c'), batches([{ id: 4, l: [{ d: 'never' }] }]), NO_CHECKPOINT);
    expect(await columnTypes('SELECT l FROM t', h.db)).toEqual({ l: 'STRUCT(d VARCHAR)[]' });
    expect(await query('SELECT count(*) AS n FROM t', h.db)).toEqual([{ n: 4 }]);
  });

  it('loads records longer than the smallest read buffer (sized from the longest line)', async () => {
    const big = 'x'.repeat(3 << 20);
    const sink = await openSink();
    const file = await jsonlFile(
      'big.jsonl.gz',
      [
        { id: 1, text: 'small' },
        { id: 2, text: big },
      ],
      true,
    );
    expect(await load(sink, 'u', file)).toEqual({ committed: true, records: 2 });
    expect(await query('SELECT id, length(text) AS n FROM t ORDER BY id', h.db)).toEqual([
      { id: 1, n: 5 },
      { id: 2, n: 3 << 20 },
    ]);
  });

  it('loads one unit at a time per database file, across sinks', async () => {
    let inside = 0;
    let most = 0;
    // A commit held inside its transaction: how many are inside at once, across both sinks.
    armed('duckdb:after-data', async () => {
      most = Math.max(most, ++inside);
      await new Promise((r) => setTimeout(r, 20));
      inside--;
    });
    const a = await openSink({ table: 'a' });
    const b = await openSink({ table: 'b' });
    const files = await Promise.all(
      Array.from({ length: 4 }, (_, i) => jsonlFile(`u${i}.jsonl.gz`, [{ id: i }], true)),
    );
    const results = await Promise.all(files.flatMap((f, i) => [load(a, `u${i}`, f), load(b, `u${i}`, f)]));
    expect(results.every((r) => r.committed && r.records === 1)).toBe(true);
    expect(most).toBe(1);
    expect(await query('SELECT (SELECT count(*) FROM a) AS a, (SELECT count(*) FROM b) AS b', h.db)).toEqual([
      { a: 4, b: 4 },
    ]);
  });
});

function failOn(id: string, bad: string): void {
  if (id === bad) throw new Error('injected failure');
}
