import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Logger } from '../../src/core/types.js';
import { selfIdentity, type ProcessIdentity } from '../../src/state/process-identity.js';
import { LockedError, acquireRunLock, processAlive } from '../../src/state/run-lock.js';

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

/** A lock file as this version writes it, for `id`. */
const recordFile = (file: string, id: Partial<ProcessIdentity>): void =>
  writeFileSync(
    file,
    JSON.stringify({
      ...id,
      since: '2026-11-23T03:00:00.000Z',
      command: 'sluice run p.yaml',
      token: 'f00df00df00df00d',
    }),
  );

/** A lock file as versions before the holder's start time and boot id wrote it. */
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
    // Released once the second taker says it waits, not after a delay: on a loaded machine a delay can pass before
    // the second taker has even tried, which then finds the lock free and never waits.
    while (!log.lines.some((l) => l.startsWith('waiting for the lock'))) await new Promise((r) => setTimeout(r, 5));
    await first.release();
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

  it('is taken over at once from a dead holder that had our pid and host (a retried pod) but another start', async () => {
    const file = path.join(dir, 'g.lock');
    const me = selfIdentity();
    expect(me.start, 'this test needs /proc').toBeDefined();
    // The container's previous process: same hostname, same pid namespace, same pid (this process's), but it
    // started at another moment.
    recordFile(file, { ...me, start: String(Number(me.start) - 1) });
    const log = recordingLog();
    const lock = await acquireRunLock(file, { command: 'retried', log });
    expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({ command: 'retried', start: me.start });
    expect(log.lines.some((l) => l.includes(`its holder (pid ${process.pid}`) && l.includes('no longer running'))).toBe(
      true,
    );
    await lock.release();
  });

  it('is taken over from a holder of an earlier version that recorded only our pid', async () => {
    const file = path.join(dir, 'h.lock');
    holderFile(file, process.pid);
    const lock = await acquireRunLock(file, { command: 'upgraded', log: recordingLog() });
    expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({ command: 'upgraded' });
    await lock.release();
  });

  it('is taken over from our hostname in another boot or container once its lease lapsed, not before', async () => {
    const file = path.join(dir, 'i.lock');
    const me = selfIdentity();
    // A retried pod on another node: same hostname and pid, another kernel. Nothing renews this lease.
    recordFile(file, { ...me, boot: 'another-boot' });
    const log = recordingLog();
    const lock = await acquireRunLock(file, { command: 'retried', log, leaseMs: 150, pollMs: 10 });
    expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({ command: 'retried', boot: me.boot });
    expect(log.lines.some((l) => l.includes('watching its lease'))).toBe(true);
    expect(log.lines.some((l) => l.includes('has not renewed its lease'))).toBe(true);
    await lock.release();
  });

  it('is never taken over from a live holder in another container of our hostname: it renews its lease', async () => {
    const file = path.join(dir, 'j.lock');
    const other = { ...selfIdentity(), pidns: 'pid:[1]' };
    const holder = await acquireRunLock(file, { command: 'live', log: recordingLog(), self: other, renewMs: 10 });
    const err = await acquireRunLock(file, { command: 'x', log: recordingLog(), leaseMs: 1000, pollMs: 20 }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(LockedError);
    expect((err as Error).message).toContain('another container or boot');
    expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({ command: 'live' });
    await holder.release();
  });

  it("never takes over another host's lock, however long it went without renewal", async () => {
    const file = path.join(dir, 'k.lock');
    recordFile(file, { ...selfIdentity(), host: 'node-7', boot: 'another-boot' });
    const err = await acquireRunLock(file, {
      command: 'x',
      log: recordingLog(),
      leaseMs: 1,
      waitMs: 100,
      pollMs: 5,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LockedError);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({ host: 'node-7' });
  });

  it('takes over past a claimant that died in the middle of its takeover', async () => {
    const file = path.join(dir, 'l.lock');
    const dead = sleeper();
    const deadClaimant = sleeper();
    await Promise.all([dead.kill(), deadClaimant.kill()]);
    recordFile(file, { ...selfIdentity(), pid: dead.pid, start: undefined });
    const key = createHash('sha256').update(readFileSync(file, 'utf8')).digest('hex').slice(0, 16);
    recordFile(`${file}.takeover-${key}-0`, { ...selfIdentity(), pid: deadClaimant.pid, start: undefined });
    const lock = await acquireRunLock(file, { command: 'third', log: recordingLog() });
    expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({ command: 'third' });
    expect(readdirSync(dir).filter((f) => f.startsWith('l.lock.'))).toEqual([]);
    await lock.release();
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
