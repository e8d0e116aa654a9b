import { describe, expect, it } from 'vitest';
import { InterruptedError } from '../../src/core/errors.js';
import { RunSession } from '../../src/runtime/session.js';
import { recordingLogger } from '../support/in-memory.js';

describe('RunSession', () => {
  it('releases what it holds in the reverse order it was acquired, once, with the failure so far', async () => {
    const log = recordingLogger();
    const session = new RunSession(log, undefined, 1000);
    const released: string[] = [];
    const seen: unknown[] = [];
    session.hold('releasing the lock', 'lock', (r) => void released.push(r));
    session.defer('recording the run', (failure) => {
      released.push('history');
      seen.push(failure);
    });
    session.hold('closing sink', 'sink', async (r) => void released.push(r));
    const boom = new Error('boom');
    expect(await session.close(boom)).toBe(boom);
    // A second close (a caller that also cleans up) releases nothing again and answers the same.
    expect(await session.close(undefined)).toBe(boom);
    expect(released).toEqual(['sink', 'history', 'lock']);
    expect(seen).toEqual([boom]);
    expect(() => session.defer('late', () => undefined)).toThrow(/already closed/);
  });

  it('goes on releasing when a release fails: a sink that fails to close only warns, a source is best effort', async () => {
    const log = recordingLogger();
    const session = new RunSession(log, undefined, 1000);
    const released: string[] = [];
    session.hold('releasing the lock', 'lock', (r) => void released.push(r));
    session.defer('closing the source', () => Promise.reject(new Error('socket gone')), 'ignore');
    session.defer('closing sink', () => Promise.reject(new Error('file busy')));
    expect(await session.close(undefined)).toBeUndefined();
    expect(released).toEqual(['lock']);
    expect(log.lines).toEqual(['warn: closing sink: file busy']);
  });

  it('fails a run that succeeded when a fatal release fails (dead letters may be lost), and tells the later releases', async () => {
    const log = recordingLogger();
    const session = new RunSession(log, undefined, 1000);
    const seen: unknown[] = [];
    session.defer('recording the run', (failure) => void seen.push(failure));
    const lost = new Error('disk full');
    session.defer('closing the dead-letter file', () => Promise.reject(lost), 'fatal');
    expect(await session.close(undefined)).toBe(lost);
    expect(seen).toEqual([lost]);
  });

  it('never replaces the run’s own failure with a cleanup’s: that one is warned about', async () => {
    const log = recordingLogger();
    const session = new RunSession(log, undefined, 1000);
    session.defer('closing the dead-letter file', () => Promise.reject(new Error('disk full')), 'fatal');
    const own = new Error('unit failed');
    expect(await session.close(own)).toBe(own);
    expect(log.lines).toEqual(['warn: closing the dead-letter file: disk full']);
  });

  it('stops waits on an interrupt and when it closes; units in flight are cancelled when the session closes', async () => {
    const interrupt = new AbortController();
    const session = new RunSession(recordingLogger(), interrupt.signal, 60_000);
    expect([session.signal.aborted, session.units.aborted, session.interrupted]).toEqual([false, false, false]);
    interrupt.abort('SIGTERM');
    // No new unit starts; those in flight keep their grace.
    expect([session.signal.aborted, session.units.aborted, session.interrupted]).toEqual([true, false, true]);
    const err = session.interruption({ total: 3, done: 1, skipped: 0, failed: 0 });
    expect(err).toBeInstanceOf(InterruptedError);
    expect(err.message).toContain('1/3 units committed');
    await session.close(err);
    expect(session.units.aborted).toBe(true);
  });

  it('is stopped from the start when the interrupt came before it', async () => {
    const interrupt = new AbortController();
    interrupt.abort('SIGINT');
    const session = new RunSession(recordingLogger(), interrupt.signal, 60_000);
    expect(session.signal.aborted).toBe(true);
    await session.close(undefined);
  });
});
