import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Logger } from '../../src/core/types.js';
import { LockedError, acquireRunLock, processAlive } from '../../src/engine/run-lock.js';

const dir = mkdtempSync(path.join(tmpdir(), 'sluice-lock-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function recordingLog(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const add = (m: string): void => void lines.push(m);
  return { lines, debug: add, info: add, warn: add, error: add };
}

/** A child process that lives until killed: a holder whose pid is real. */
function sleeper(): { pid: number; kill: () => Promise<void> } {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  return {
    pid: child.pid!,
    kill: async () => {
      child.kill('SIGKILL');
      await exited;
    },
  };
}

const holderFile = (file: string, pid: number, host = hostname()): void =>
  writeFileSync(file, JSON.stringify({ pid, host, since: '2026-11-23T03:00:00.000Z', command: 'sluice run p.yaml' }));

describe('the run lock', () => {
  it('is taken once: a second taker fails at once naming the holder, and can take it after release', async () => {
    const file = path.join(dir, 'a.lock');
    const log = recordingLog();
    const first = await acquireRunLock(file, { command: 'sluice run a.yaml', log });
    const err = await acquireRunLock(file, { command: 'sluice run a.yaml', log }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LockedError);
    expect((err as LockedError).holder).toMatchObject({
      pid: process.pid,
      host: hostname(),
      command: 'sluice run a.yaml',
    });
    expect((err as Error).message).toContain(`locked by pid ${process.pid}`);
    await first.release();
    const second = await acquireRunLock(file, { command: 'again', log });
    expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({ pid: process.pid, command: 'again' });
    await second.release();
  });

  it('is taken over, with a log line, from a holder killed with SIGKILL on this host', async () => {
    const file = path.join(dir, 'b.lock');
    const holder = sleeper();
    holderFile(file, holder.pid);
    const log = recordingLog();
    await expect(acquireRunLock(file, { command: 'x', log })).rejects.toBeInstanceOf(LockedError);
    await holder.kill();
    expect(processAlive(holder.pid)).toBe(false);
    const lock = await acquireRunLock(file, { command: 'x', log });
    expect(log.lines.some((l) => l.includes(`its holder (pid ${holder.pid}`) && l.includes('no longer running'))).toBe(
      true,
    );
    await lock.release();
  });

  it("never takes over another host's lock, whatever its pid", async () => {
    const file = path.join(dir, 'c.lock');
    holderFile(file, 999_999_999, 'some-other-host');
    const err = await acquireRunLock(file, { command: 'x', log: recordingLog() }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LockedError);
    expect((err as LockedError).hint).toContain('on some-other-host');
  });

  it('with a wait, waits for a live holder to finish and then takes the lock', async () => {
    const file = path.join(dir, 'd.lock');
    const log = recordingLog();
    const first = await acquireRunLock(file, { command: 'first', log });
    const waiting = acquireRunLock(file, { command: 'second', log, waitMs: 10_000, pollMs: 20 });
    setTimeout(() => void first.release(), 100);
    const second = await waiting;
    expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({ command: 'second' });
    expect(log.lines.some((l) => l.startsWith('waiting for the lock'))).toBe(true);
    await second.release();
  });

  it('with a wait that runs out, fails as locked', async () => {
    const file = path.join(dir, 'e.lock');
    const first = await acquireRunLock(file, { command: 'first', log: recordingLog() });
    await expect(
      acquireRunLock(file, { command: 'second', log: recordingLog(), waitMs: 60, pollMs: 20 }),
    ).rejects.toBeInstanceOf(LockedError);
    await first.release();
  });

  it('release removes only its own lock, not one taken over since', async () => {
    const file = path.join(dir, 'f.lock');
    const lock = await acquireRunLock(file, { command: 'mine', log: recordingLog() });
    holderFile(file, 12345, 'host-that-took-over');
    await lock.release();
    expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({ host: 'host-that-took-over' });
  });

  it('reports a directory it cannot write as such, not as a lock', async () => {
    const err = await acquireRunLock(path.join(dir, 'missing-dir', 'x.lock'), {
      command: 'x',
      log: recordingLog(),
    }).catch((e: unknown) => e);
    expect(err).not.toBeInstanceOf(LockedError);
    expect((err as NodeJS.ErrnoException).code).toBe('ENOENT');
  });
});
