import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { DateOnly } from '../../../src/core/values.js';
import { InferredSchema } from '../../../src/schema/infer.js';
import { writeNdjson } from '../../../src/sink-kit/output-files/ndjson-writer.js';
import { batches, removeTempDirs, tempDir } from '../../sinks/helpers.js';

afterAll(removeTempDirs);

describe('writeNdjson', () => {
  it('writes one JSON object per line, typed values as ISO text, observing the schema', async () => {
    const file = path.join(await tempDir(), 'x.json');
    const schema = new InferredSchema();
    const r = await writeNdjson(
      batches([{ a: 1, at: new Date(0), d: new DateOnly('2024-01-02') }], [], [{ a: 2.5, big: 12345678901234567890n }]),
      file,
      { schema, sync: true },
    );
    expect(r.rows).toBe(2);
    const text = await readFile(file, 'utf8');
    expect(text).toBe(
      '{"a":1,"at":"1970-01-01T00:00:00.000Z","d":"2024-01-02"}\n{"a":2.5,"big":"12345678901234567890"}\n',
    );
    expect(r.bytes).toBe(Buffer.byteLength(text));
    expect(schema.rows).toBe(2);
    expect(schema.column('a')?.kind).toBe('double');
  });

  it('gzips at the given level', async () => {
    const file = path.join(await tempDir(), 'x.json.gz');
    await writeNdjson(batches([{ a: 'x'.repeat(1000) }]), file, { gzipLevel: 1 });
    expect(gunzipSync(await readFile(file)).toString()).toBe(`{"a":"${'x'.repeat(1000)}"}\n`);
  });
});
