/**
 * The checked copy on worker threads (src/sink-kit/raw-jsonl/copy-workers.ts), through the compiled module the CLI
 * runs (the suite's TypeScript has no worker to start: from source the jsonl sink copies on the main thread): the
 * same copy, records and longest line as on the main thread, the columns observed, and the copy's refusals rebuilt
 * as they are thrown there — a line that is not an object or not judged storable, gzip that does not decompress.
 */
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { JSONL_LIMITS } from '../../../sinks/jsonl/config.js';
import type { asNativeRefusal as refusalOf } from '../../../src/sink-kit/raw-jsonl/refusal.js';
import type { BadJsonlLine as Bad } from '../../../src/sink-kit/raw-jsonl/line.js';
import type { CopyWorkers as Workers } from '../../../src/sink-kit/raw-jsonl/copy-workers.js';
import { describeType } from '../../../src/core/logical-type.js';
import { removeTempDirs, tempDir } from '../../sinks/helpers.js';

/** A module of the compiled CLI: its errors are its own classes, not the source's. */
const compiled = (rel: string): string =>
  pathToFileURL(path.resolve(import.meta.dirname, '../../../dist/src/sink-kit/raw-jsonl', rel)).href;

afterAll(removeTempDirs);

async function workers(): Promise<Workers> {
  const { CopyWorkers } = (await import(compiled('copy-workers.js'))) as { CopyWorkers: typeof Workers };
  expect(CopyWorkers.available()).toBe(true);
  return new CopyWorkers(2);
}

const EXPECTED = { a: 'DOUBLE', t: 'TIMESTAMP', b: 'STRUCT<{c: VARCHAR}>' };

describe('the checked copy on worker threads', () => {
  it('copies side by side, decompressing, with the records, longest line and columns; appends when told', async () => {
    const dir = await tempDir();
    const text = ['{"a":1,"t":"2024-01-02T03:04:05Z"}', '{"a":2.5,"b":{"c":"x"}}', ''].join('\n');
    await writeFile(path.join(dir, 'in.jsonl.gz'), gzipSync(text));
    const before = '{"earlier":"unit"}\n';
    await writeFile(path.join(dir, 'one.jsonl'), before);
    await writeFile(path.join(dir, 'two.jsonl'), before);
    const w = await workers();
    try {
      const [one, two] = await Promise.all(
        ['one', 'two'].map((n) =>
          w.copy({
            src: path.join(dir, 'in.jsonl.gz'),
            dest: path.join(dir, `${n}.jsonl`),
            gzipLevel: undefined,
            limits: JSONL_LIMITS,
            maxLineBytes: 1024,
            append: n === 'two',
          }),
        ),
      );
      expect(await readFile(path.join(dir, 'two.jsonl'), 'utf8')).toBe(before + text);
      for (const c of [one!, two!]) {
        expect(c.records).toBe(2);
        expect(c.longest).toBe(34);
        expect(Object.fromEntries([...c.columns].map(([k, t]) => [k, describeType(t)]))).toEqual(EXPECTED);
      }
      expect(await readFile(path.join(dir, 'one.jsonl'), 'utf8')).toBe(text);
    } finally {
      await w.close();
    }
  });

  it('refuses as the main thread does: the line and its offset, a record too deep, broken gzip', async () => {
    const dir = await tempDir();
    await writeFile(path.join(dir, 'bad.jsonl'), '{"a":1}\n[1,2]\n');
    await writeFile(path.join(dir, 'deep.jsonl'), `{"a":1}\n${'{"x":'.repeat(600)}1${'}'.repeat(600)}\n`);
    const gz = gzipSync('{"a":1}\n'.repeat(1000));
    await writeFile(path.join(dir, 'cut.jsonl.gz'), gz.subarray(0, gz.length - 12));
    const w = await workers();
    const copy = (name: string) =>
      w
        .copy({
          src: path.join(dir, name),
          dest: path.join(dir, `${name}.out`),
          gzipLevel: undefined,
          limits: JSONL_LIMITS,
          maxLineBytes: 1 << 20,
          append: false,
        })
        .catch((e: unknown) => e);
    const { BadJsonlLine } = (await import(compiled('line.js'))) as { BadJsonlLine: typeof Bad };
    const { asNativeRefusal } = (await import(compiled('refusal.js'))) as { asNativeRefusal: typeof refusalOf };
    try {
      const bad = await copy('bad.jsonl');
      expect(bad).toBeInstanceOf(BadJsonlLine);
      expect(bad).toMatchObject({ offset: 8, message: 'line at byte 8 is not a JSON object' });
      const deep = await copy('deep.jsonl');
      expect(deep).toBeInstanceOf(BadJsonlLine);
      expect((deep as Error).message).toMatch(/the record at byte 8: nested more than 500 levels deep/);
      const cut = await copy('cut.jsonl.gz');
      expect(asNativeRefusal('jsonl sink', cut)).toMatchObject({ name: 'NativeLoadRefused' });
    } finally {
      await w.close();
    }
  });
});
