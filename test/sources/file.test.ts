/** The file source's incremental plan: which files a run loads, given the fingerprints earlier runs committed. */
import { mkdirSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Source, WorkUnit } from '../../src/core/types.js';
import { fileSchema, fileSource } from '../../src/sources/file.js';
import { recordingLogger, sourceContext, tempDir } from '../engine/in-memory.js';

function setup(extra: Record<string, unknown> = {}): { dir: string; source: Source } {
  const dir = tempDir();
  mkdirSync(path.join(dir, 'in'));
  const cfg = fileSchema.parse({ type: 'file', paths: ['in'], format: 'jsonl', ...extra });
  const source = fileSource.create(cfg, { log: recordingLogger(), baseDir: dir, client: () => Promise.reject() });
  return { dir, source };
}

function put(dir: string, name: string, text: string, mtime: number): void {
  const file = path.join(dir, 'in', name);
  writeFileSync(file, text);
  utimesSync(file, mtime, mtime);
}

/** What a run that committed `units` hands the next plan (by source unit id). */
const committed = (source: Source, units: WorkUnit[]): Map<string, unknown> =>
  new Map(units.map((u) => [u.id, source.unitCheckpoint!(u)]));

const names = (units: WorkUnit[]): string[] => units.map((u) => path.basename(u.params.path as string));

describe('file source, incremental', () => {
  it('plans only files not loaded before or changed since; a touched file with the same bytes is not one', async () => {
    const { dir, source } = setup();
    put(dir, 'a.jsonl', '{"id":1}\n', 1_700_000_000);
    put(dir, 'b.jsonl', '{"id":2}\n', 1_700_000_000);
    put(dir, 'c.jsonl', '{"id":3}\n', 1_700_000_000);
    const first = await source.plan(sourceContext({ checkpoints: new Map() }));
    expect(names(first)).toEqual(['a.jsonl', 'b.jsonl', 'c.jsonl']);
    expect(source.unitCheckpoint!(first[0]!)).toEqual({
      path: path.join('in', 'a.jsonl'),
      size: 9,
      mtimeMs: 1_700_000_000_000,
      sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
    });

    put(dir, 'b.jsonl', '{"id":9}\n', 1_700_000_100); // same size, new bytes
    put(dir, 'c.jsonl', '{"id":3}\n', 1_700_000_100); // touched only
    put(dir, 'd.jsonl', '{"id":4}\n', 1_700_000_100); // new
    const ctx = sourceContext({ checkpoints: committed(source, first) });
    const second = await source.plan(ctx);
    expect(names(second)).toEqual(['b.jsonl', 'd.jsonl']);
    // A changed file is a new unit: its id is not the one committed before.
    expect(second[0]!.id).not.toBe(first[1]!.id);
    expect((ctx.log as ReturnType<typeof recordingLogger>).lines).toContain(
      'info: 2 file(s) loaded before and unchanged since: skipped',
    );

    // Older runs first: the newest fingerprint of b decides.
    const both = new Map([...committed(source, first), ...committed(source, second)]);
    expect(await source.plan(sourceContext({ checkpoints: both }))).toEqual([]);
  });

  it('with `incremental: false` plans every file and keeps no cursor', async () => {
    const { dir, source } = setup({ incremental: false });
    put(dir, 'a.jsonl', '{"id":1}\n', 1_700_000_000);
    expect(source.unitCheckpoint).toBeUndefined();
    const units = await source.plan(sourceContext({ checkpoints: new Map([['x', { path: 'in/a.jsonl' }]]) }));
    expect(names(units)).toEqual(['a.jsonl']);
  });
});
