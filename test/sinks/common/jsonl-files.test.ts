import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { duckdbType } from '../../../src/schema/duckdb-types.js';
import { InferredSchema } from '../../../src/schema/infer.js';
import { isGzipFile, scanJsonl } from '../../../sinks/common/jsonl-files.js';
import { removeTempDirs, tempDir } from '../helpers.js';

afterAll(removeTempDirs);

describe('scanJsonl', () => {
  it('observes every line, sniffing gzip by its magic bytes, and types ISO text like DuckDB', async () => {
    const dir = await tempDir();
    const file = path.join(dir, 'no-extension');
    const lines = [
      { at: '2024-01-02T03:04:05+02:00', day: '2024-01-02', mixed: '2024-01-02', text: '2024-01-02', n: 1 },
      { at: '2024-01-02T03:04:05Z', day: null, mixed: '2024-01-02 10:00:00', text: 'later', n: 2 },
    ];
    await writeFile(file, gzipSync(lines.map((l) => JSON.stringify(l)).join('\n') + '\n\n'));
    expect(await isGzipFile(file)).toBe(true);
    const schema = new InferredSchema({ temporalText: true });
    expect(await scanJsonl(file, schema)).toEqual({ records: 2, gzip: true });
    expect(Object.fromEntries([...schema.columns].map(([k, t]) => [k, duckdbType(t)]))).toEqual({
      at: 'TIMESTAMP',
      day: 'DATE',
      mixed: 'TIMESTAMP',
      text: 'VARCHAR',
      n: 'BIGINT',
    });
    // Text that stopped looking like a timestamp is text, not a conflict.
    expect(schema.conflicts.size).toBe(0);
  });

  it('throws on a line that is not a JSON object, with its byte offset', async () => {
    const file = path.join(await tempDir(), 'x.jsonl');
    await writeFile(file, '{"a":1}\n"just a string"\n');
    await expect(scanJsonl(file, new InferredSchema())).rejects.toThrow(/line at byte 8 is not a JSON object/);
  });
});
