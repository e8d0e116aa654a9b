import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  fileSinkLockPath,
  manifestCheckpoints,
  newPublishId,
  openFileSinkOutput,
  publishedFilesGlob,
} from '../../../sinks/output-files/file-sink.js';
import { emptyManifest } from '../../../sinks/output-files/manifest.js';
import { recordingLogger, tempDir } from '../../engine/in-memory.js';

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
