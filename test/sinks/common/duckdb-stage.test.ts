import { readFile, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { duckdbType } from '../../../src/schema/duckdb-types.js';
import { InferredSchema } from '../../../src/schema/infer.js';
import { scanJsonlForDuckDB } from '../../../sinks/common/duckdb-stage.js';
import { removeTempDirs, tempDir } from '../helpers.js';

afterAll(removeTempDirs);

const lines = [
  { at: '2024-01-02T03:04:05+02:00', day: '2024-01-02', mixed: '2024-01-02', text: '2024-01-02', n: 1 },
  { at: '2024-01-02T03:04:05Z', day: null, mixed: '2024-01-02 10:00:00', text: 'later', n: 2, long: 'x'.repeat(300) },
];
const text = lines.map((l) => JSON.stringify(l)).join('\n') + '\n\n';

describe('scanJsonlForDuckDB', () => {
  it('observes every line, types ISO text like DuckDB, and stages gzip input decompressed', async () => {
    const dir = await tempDir();
    const file = path.join(dir, 'no-extension');
    await writeFile(file, gzipSync(text));
    const staging = path.join(dir, 'stage.json');
    const schema = new InferredSchema({ temporalText: true });
    const scan = await scanJsonlForDuckDB(file, schema, staging);
    expect(scan).toEqual({
      path: staging,
      staged: true,
      records: 2,
      longestLine: Buffer.byteLength(JSON.stringify(lines[1])),
    });
    expect(await readFile(staging, 'utf8')).toBe(text);
    expect(Object.fromEntries([...schema.columns].map(([k, t]) => [k, duckdbType(t)]))).toEqual({
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
    const schema = new InferredSchema({ temporalText: true });
    const scan = await scanJsonlForDuckDB(file, schema, staging);
    expect(scan.records).toBe(4000);
    expect(scan.longestLine).toBe(Math.max(...rows.map((r) => Buffer.byteLength(r))));
    expect(await readFile(staging, 'utf8')).toBe(big);
    expect(schema.rows).toBe(4000);
  });

  it('reads plain input where it is, without a staging file', async () => {
    const dir = await tempDir();
    const file = path.join(dir, 'in.jsonl');
    await writeFile(file, text);
    const scan = await scanJsonlForDuckDB(file, new InferredSchema(), path.join(dir, 'stage.json'));
    expect(scan).toMatchObject({ path: file, staged: false, records: 2 });
    expect(await readdir(dir)).toEqual(['in.jsonl']);
  });

  it('throws on a line that is not a JSON object, with its byte offset, and removes the staging file', async () => {
    const dir = await tempDir();
    const file = path.join(dir, 'x.jsonl.gz');
    await writeFile(file, gzipSync('{"a":1}\n"just a string"\n'));
    await expect(scanJsonlForDuckDB(file, new InferredSchema(), path.join(dir, 'stage.json'))).rejects.toThrow(
      /line at byte 8 is not a JSON object/,
    );
    expect(await readdir(dir)).toEqual(['x.jsonl.gz']);
  });
});
