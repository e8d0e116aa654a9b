import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { knownCheckpoint, NO_CHECKPOINT } from '../../../src/core/checkpoint.js';
import {
  fileSinkLockPath,
  manifestCheckpoints,
  newPublishId,
  openFileSinkOutput,
  publishedFilesGlob,
  stageUnit,
  type StageUnitOptions,
} from '../../../src/sink-kit/output-files/file-sink.js';
import type { OutputDir } from '../../../src/sink-kit/output-files/output-dir.js';
import { emptyManifest } from '../../../src/sink-kit/output-files/manifest.js';
import { recordingLogger, tempDir } from '../../support/in-memory.js';

const ctx = (baseDir: string) => ({
  log: recordingLogger(),
  deadLetter: () => undefined,
  baseDir,
  pipeline: 'p',
  fresh: false,
});

describe('file sink helpers', () => {
  it('open the output for the sink’s format, each shard with its own manifest and file names', async () => {
    const base = tempDir();
    const target = { path: 'out', write: 'append' as const };
    const whole = await openFileSinkOutput(target, ctx(base), {}, 'jsonl');
    expect(whole.dataDir).toBe(path.join(base, 'out'));
    expect(whole.manifest.format).toBe('jsonl');
    expect(newPublishId(whole)).toMatch(/^\d{17}-[0-9a-f]{6}$/);

    const shard = { index: 2, count: 4 };
    const part = await openFileSinkOutput(target, ctx(base), { shard }, 'jsonl');
    expect(newPublishId(part)).toMatch(/^shard-2-of-4-\d{17}-[0-9a-f]{6}$/);
    expect(fileSinkLockPath(target, base, shard)).not.toBe(fileSinkLockPath(target, base, undefined));
  });

  it('glob the published files on disk and on S3, and read the checkpoints the manifest holds', () => {
    expect(publishedFilesGlob('/base', 'out', '*.parquet')).toBe(path.join('/base', 'out', '**', '*.parquet'));
    expect(publishedFilesGlob('/base', 's3://b/p', '*.jsonl*')).toBe('s3://b/p/**/*.jsonl*');
    expect(publishedFilesGlob('/base', 's3://b/p//', '*.jsonl*')).toBe('s3://b/p/**/*.jsonl*');

    const m = emptyManifest('p', 'jsonl');
    m.units.a = { records: 1, files: ['f'], committed_at: 't', checkpoint: { at: 1 } };
    m.units.b = { records: 0, files: [], committed_at: 't' };
    expect(manifestCheckpoints(m)).toEqual(new Map([['a', { at: 1 }]]));
  });
});

describe('stageUnit', () => {
  /** Stages `lines` as unit `id`'s file; `publish` counts its calls (or fails). */
  function options(out: OutputDir, lines: string[], extra: Partial<StageUnitOptions> = {}) {
    const log = recordingLogger();
    let published = 0;
    const o: StageUnitOptions = {
      name: `${Math.random().toString(16).slice(2)}.staged`,
      write: async (file, schema) => {
        writeFileSync(file, lines.join(''));
        schema.observe(lines.map((l) => JSON.parse(l) as Record<string, unknown>));
        return { rows: lines.length, bytes: lines.join('').length };
      },
      stagedColumns: () => [],
      joinColumns: (_m, schema) => [{ column: [...schema.columns.keys()].join(','), change: 'added', to: 'n' }],
      publishing: {
        stagedEnough: () => true,
        publish: async () => {
          published++;
        },
      },
      label: 'test sink',
      log,
      ...extra,
    };
    return { o, log, published: () => published };
  }

  it('records the unit with its staged file once; a second commit of the unit stages nothing and reports it', async () => {
    const out = await openFileSinkOutput({ path: 'out', write: 'append' }, ctx(tempDir()), {}, 'jsonl');
    const first = options(out, ['{"n":1}\n', '{"n":2}\n']);
    const r = await stageUnit(out, { id: 'u1', params: {} }, knownCheckpoint({ at: 1 }), first.o);
    expect(r).toMatchObject({
      committed: true,
      records: 2,
      schemaChanges: [{ column: 'n', change: 'added', to: 'n' }],
    });
    expect(out.manifest.units.u1).toMatchObject({ records: 2, checkpoint: { at: 1 } });
    expect(out.manifest.units.u1!.staged?.file).toBe(`${out.stagedRel}/${first.o.name}`);
    expect(first.published()).toBe(1);

    const again = options(out, ['{"n":3}\n']);
    expect(await stageUnit(out, { id: 'u1', params: {} }, NO_CHECKPOINT, again.o)).toEqual({
      committed: false,
      records: 0,
    });
    expect(again.published()).toBe(0);
    expect(readdirSync(out.stagedDir)).toEqual([first.o.name]);
  });

  it('records a unit without records but keeps no file; a failed write or publish loses nothing committed', async () => {
    const out = await openFileSinkOutput({ path: 'out', write: 'append' }, ctx(tempDir()), {}, 'jsonl');
    const empty = options(out, []);
    expect(await stageUnit(out, { id: 'empty', params: {} }, NO_CHECKPOINT, empty.o)).toEqual({
      committed: true,
      records: 0,
    });
    expect(out.manifest.units.empty).toMatchObject({ records: 0, files: [] });
    expect(out.manifest.units.empty!.staged).toBeUndefined();
    expect(existsSync(path.join(out.stagedDir, empty.o.name))).toBe(false);

    const refused = options(out, ['{"n":1}\n'], {
      write: async (file) => {
        writeFileSync(file, 'half');
        throw new Error('refused by the sink');
      },
    });
    await expect(stageUnit(out, { id: 'bad', params: {} }, NO_CHECKPOINT, refused.o)).rejects.toThrow(
      'refused by the sink',
    );
    expect(out.manifest.units.bad).toBeUndefined();
    expect(existsSync(path.join(out.stagedDir, refused.o.name))).toBe(false);

    const unpublished = options(out, ['{"n":1}\n'], {
      publishing: {
        stagedEnough: () => true,
        publish: async () => {
          throw new Error('disk full');
        },
      },
    });
    expect(await stageUnit(out, { id: 'kept', params: {} }, NO_CHECKPOINT, unpublished.o)).toMatchObject({
      committed: true,
      records: 1,
    });
    expect(unpublished.log.lines.join('\n')).toMatch(
      /test sink: publishing staged units failed, retried at the end: Error: disk full/,
    );
    expect(out.manifest.units.kept!.staged).toBeDefined();
  });
});
