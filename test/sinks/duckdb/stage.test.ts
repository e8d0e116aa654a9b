import { readFile, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { duckdbType } from '../../../src/schema/duckdb-types.js';
import { discard, stageRawJsonl, stageRows, StagingDir } from '../../../sinks/duckdb/stage.js';
import { unitFileStem } from '../../../src/sink-kit/output-files/unit-file-name.js';
import { BadJsonlLine } from '../../../src/sink-kit/raw-jsonl/line.js';
import { batches, removeTempDirs, tempDir } from '../helpers.js';

afterAll(removeTempDirs);

const lines = [
  { at: '2024-01-02T03:04:05+02:00', day: '2024-01-02', mixed: '2024-01-02', text: '2024-01-02', n: 1 },
  { at: '2024-01-02T03:04:05Z', day: null, mixed: '2024-01-02 10:00:00', text: 'later', n: 2, long: 'x'.repeat(300) },
];
const text = lines.map((l) => JSON.stringify(l)).join('\n') + '\n\n';

describe('stageRawJsonl', () => {
  it('observes every line, types ISO text like DuckDB, and stages gzip input decompressed', async () => {
    const dir = await tempDir();
    const file = path.join(dir, 'no-extension');
    await writeFile(file, gzipSync(text));
    const staging = path.join(dir, 'stage.json');
    const scan = await stageRawJsonl(file, staging);
    expect(scan).toMatchObject({
      path: staging,
      staged: true,
      rows: 2,
      longestLine: Buffer.byteLength(JSON.stringify(lines[1])),
    });
    expect(await readFile(staging, 'utf8')).toBe(text);
    const schema = scan.schema;
    expect(Object.fromEntries([...scan.columns].map(([k, t]) => [k, duckdbType(t)]))).toEqual({
      at: 'TIMESTAMP',
      day: 'DATE',
      mixed: 'TIMESTAMP',
      text: 'VARCHAR',
      n: 'BIGINT',
      long: 'VARCHAR',
    });
    // Text that stopped looking like a timestamp is text, not a conflict.
    expect(schema.conflicts.size).toBe(0);
  });

  it('parses lines that straddle read chunks (several hundred KiB of input)', async () => {
    const dir = await tempDir();
    const file = path.join(dir, 'big.jsonl.gz');
    const rows = Array.from({ length: 4000 }, (_, i) => JSON.stringify({ i, pad: 'é'.repeat(i % 97) }));
    const big = rows.join('\n') + '\n';
    await writeFile(file, gzipSync(big));
    const staging = path.join(dir, 'stage.json');
    const scan = await stageRawJsonl(file, staging);
    expect(scan.rows).toBe(4000);
    expect(scan.longestLine).toBe(Math.max(...rows.map((r) => Buffer.byteLength(r))));
    expect(await readFile(staging, 'utf8')).toBe(big);
    expect(scan.schema.rows).toBe(4000);
  });

  it('reads plain input where it is, without a staging file', async () => {
    const dir = await tempDir();
    const file = path.join(dir, 'in.jsonl');
    await writeFile(file, text);
    const scan = await stageRawJsonl(file, path.join(dir, 'stage.json'));
    expect(scan).toMatchObject({ path: file, staged: false, rows: 2 });
    expect(await readdir(dir)).toEqual(['in.jsonl']);
    // Discarding a unit read in place leaves the input alone.
    await discard(scan);
    expect(await readdir(dir)).toEqual(['in.jsonl']);
  });

  it('throws on a line that is not a JSON object, with its byte offset, and removes the staging file', async () => {
    const dir = await tempDir();
    const file = path.join(dir, 'x.jsonl.gz');
    await writeFile(file, gzipSync('{"a":1}\n"just a string"\n'));
    const err = await stageRawJsonl(file, path.join(dir, 'stage.json')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BadJsonlLine);
    expect(err).toMatchObject({ offset: 8, message: expect.stringMatching(/line at byte 8 is not a JSON object/) });
    expect(await readdir(dir)).toEqual(['x.jsonl.gz']);
  });
});

describe('stageRows', () => {
  it('writes rows from JS to a staging file with their schema; discard removes it', async () => {
    const dir = await tempDir();
    const file = path.join(dir, 'rows.json');
    const staged = await stageRows(
      batches([{ id: 1, at: '2024-01-02T03:04:05Z', note: '2024-01-02' }], [{ id: 2, gone: null, note: 'soon' }]),
      file,
    );
    expect(staged).toMatchObject({ path: file, staged: true, rows: 2 });
    // ISO text is typed as the native reader types it (the fast and JS paths give one table); a column with any other
    // text stays text; null-only columns are left out of the typed columns.
    expect(Object.fromEntries([...staged.columns].map(([k, t]) => [k, duckdbType(t)]))).toEqual({
      id: 'BIGINT',
      at: 'TIMESTAMP',
      note: 'VARCHAR',
    });
    await discard(staged);
    expect(await readdir(dir)).toEqual([]);
  });

  it('removes its staging file when the rows fail half-way', async () => {
    const dir = await tempDir();
    async function* broken(): AsyncIterable<Record<string, unknown>[]> {
      yield [{ id: 1 }];
      throw new Error('source broke');
    }
    await expect(stageRows(broken(), path.join(dir, 'rows.json'))).rejects.toThrow(/source broke/);
    expect(await readdir(dir)).toEqual([]);
  });
});

describe('StagingDir', () => {
  it("removes only its own table's leftovers on open, and makes the directory again for a new file", async () => {
    const dir = path.join(await tempDir(), 'w.duckdb.sluice-tmp');
    const mine = new StagingDir(dir, 't');
    await mine.open('test');
    await writeFile(path.join(dir, `${unitFileStem('t')}.left-over.json`), '{}\n');
    await writeFile(path.join(dir, `${unitFileStem('other')}.theirs.json`), '{}\n');
    await mine.open('test');
    expect(await readdir(dir)).toEqual([`${unitFileStem('other')}.theirs.json`]);
    const file = await mine.file('run1/u1');
    expect(path.dirname(file)).toBe(dir);
    expect(path.basename(file).startsWith(`${unitFileStem('t')}.${unitFileStem('run1/u1')}.`)).toBe(true);
    // Not empty: close leaves it for the other table's sink.
    await mine.close();
    expect(await readdir(dir)).toHaveLength(1);
  });
});
