/**
 * Private working files: what a run leaves (state, history, dead letters) is readable by its user only whatever the
 * umask, and a working directory another local user could have created first is refused, not used.
 */
import { chmodSync, chownSync, mkdirSync, mkdtempSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SluiceError } from '../../src/core/errors.js';
import { ensurePrivateDir, privateWorkRoot } from '../../src/core/private-files.js';
import { pipelinePaths } from '../../src/state/paths.js';
import { runPipeline } from '../../src/operations/run.js';
import { s3LockPath, s3WorkDir } from '../../src/sink-kit/output-files/s3.js';
import { MemorySource, recordingLogger } from '../support/in-memory.js';
import { memoryPipeline, quiet } from '../support/memory-pipeline.js';

const mode = (p: string): number => statSync(p).mode & 0o777;

function temp(): string {
  return mkdtempSync(path.join(tmpdir(), 'sluice-private-'));
}

/**
 * A directory that belongs to another user: one this test (as root) gives away, or — when the tests do not run as
 * root and cannot give anything away — the root directory, which is root's.
 */
function othersDirectory(): string {
  if (process.getuid?.() !== 0) return '/';
  const dir = path.join(temp(), 'planted');
  mkdirSync(dir, { mode: 0o777 });
  chmodSync(dir, 0o777);
  chownSync(dir, 4242, 4242);
  return dir;
}

let umask: number;
beforeEach(() => {
  // The usual umask: without an explicit mode, files would be created 0644, readable by every local user.
  umask = process.umask(0o022);
});
afterEach(() => {
  process.umask(umask);
});

describe('what a run leaves is its user’s alone', () => {
  it('state, run history and dead letters are created 0600; a dead-letter file found 0644 is made 0600', async () => {
    const units = [1, 2].map((u) => ({ id: `u${u}`, rows: [{ id: u * 10 }, { id: u * 10 + 1 }] }));
    const w = memoryPipeline(new MemorySource(units), { a: {} });
    const p = w.pipeline();
    await runPipeline(p, quiet, { registry: w.registry, log: recordingLogger() });
    const paths = pipelinePaths(p);
    expect(mode(paths.stateFile)).toBe(0o600);
    expect(mode(path.join(paths.stateDir, 'runs.jsonl'))).toBe(0o600);
    expect(mode(paths.deadLetterFile)).toBe(0o600);

    // Left readable by all by an older version: the next run takes the others' access away.
    chmodSync(paths.deadLetterFile, 0o644);
    await runPipeline(p, { ...quiet, fresh: true }, { registry: w.registry, log: recordingLogger() });
    expect(mode(paths.deadLetterFile)).toBe(0o600);
  });
});

describe('a working directory another user could create first', () => {
  it('is created 0700, and tightened to 0700 when it is this user’s but open to others', () => {
    const dir = path.join(temp(), 'work', 'deeper');
    ensurePrivateDir(dir);
    expect(mode(dir)).toBe(0o700);
    chmodSync(dir, 0o777);
    ensurePrivateDir(dir);
    expect(mode(dir)).toBe(0o700);
  });

  it('is refused when another user owns it, or when it is a symbolic link', () => {
    const planted = othersDirectory();
    expect(() => ensurePrivateDir(planted)).toThrow(SluiceError);
    expect(() => ensurePrivateDir(planted)).toThrow(/cannot be trusted: it belongs to another user/);
    const link = path.join(temp(), 'link');
    symlinkSync(temp(), link);
    expect(() => ensurePrivateDir(link)).toThrow(/cannot be trusted: it is a symbolic link/);
  });

  it('S3 staging and locks are in the user’s own directory; one planted by another user stops nothing silently', async () => {
    const url = 's3://bucket/prefix/';
    // Today's default: not the shared, predictable /tmp/sluice-s3 that anyone can create and plant a lock in.
    const root = privateWorkRoot();
    expect(root).not.toBe(path.join(tmpdir(), 'sluice-s3'));
    expect(mode(root)).toBe(0o700);
    expect(s3LockPath(url).startsWith(root + path.sep)).toBe(true);
    expect((await s3WorkDir(url, 'p')).startsWith(root + path.sep)).toBe(true);

    // Another user made the directory and put a lock naming pid 1 in it: refused, with the directory named.
    const planted = othersDirectory();
    if (planted !== '/') {
      mkdirSync(path.join(planted, 'locks'), { recursive: true });
      writeFileSync(path.join(planted, 'locks', 'x.lock'), '{"pid":1}\n');
    }
    expect(() => privateWorkRoot({ SLUICE_WORK_DIR: planted })).toThrow(
      `the working directory ${planted} cannot be trusted: it belongs to another user`,
    );
  });
});
