import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { LockedError } from '../../../src/core/errors.js';
import { openRunState, type OpenedState, type OpenStateOptions } from '../../../src/engine/stages/open-state.js';
import { recordingLogger, tempDir } from '../in-memory.js';

type Paths = Pick<OpenStateOptions, 'stateFile' | 'tmpDir' | 'lockFile' | 'lock'>;

function paths(): Paths {
  const dir = tempDir();
  return {
    stateFile: path.join(dir, 'state.json'),
    tmpDir: path.join(dir, 'tmp'),
    lockFile: path.join(dir, 'run.lock'),
    lock: { command: 'sluice run test', log: recordingLogger() },
  };
}

/** Opens the state as a run would, then ends that run (releases its lock), as the next invocation finds it. */
async function openRunStateAndEnd(opts: OpenStateOptions): Promise<OpenedState> {
  const opened = await openRunState(opts);
  await opened.lock.release();
  return opened;
}

describe('openRunState', () => {
  it('starts a new run with a new id and keeps it in the state file', async () => {
    const p = paths();
    const first = await openRunStateAndEnd({ ...p, fresh: false });
    expect(first.resumed).toBe(false);
    expect(first.runId).toMatch(/^\d{14}-[0-9a-f]{6}$/);
    expect(first.state.get('run:id')).toBe(first.runId);
  });

  it('resumes a run that did not complete, keeping its id and its checkpoints', async () => {
    const p = paths();
    const first = await openRunStateAndEnd({ ...p, fresh: false });
    await first.state.set('snapshot:job:abc', 'snap_1');
    const again = await openRunStateAndEnd({ ...p, fresh: false });
    expect(again).toMatchObject({ resumed: true, runId: first.runId });
    expect(again.state.get('snapshot:job:abc')).toBe('snap_1');
  });

  it('starts a new run after one that completed, forgetting its checkpoints', async () => {
    const p = paths();
    const first = await openRunStateAndEnd({ ...p, fresh: false });
    await first.state.set('snapshot:job:abc', 'snap_1');
    await first.state.set('run:complete', true);
    const next = await openRunStateAndEnd({ ...p, fresh: false });
    expect(next.resumed).toBe(false);
    expect(next.runId).not.toBe(first.runId);
    expect(next.state.get('snapshot:job:abc')).toBeUndefined();
  });

  it('starts over with --fresh even when the last run did not complete', async () => {
    const p = paths();
    const first = await openRunStateAndEnd({ ...p, fresh: false });
    const fresh = await openRunStateAndEnd({ ...p, fresh: true });
    expect(fresh.resumed).toBe(false);
    expect(fresh.runId).not.toBe(first.runId);
  });

  it('resumes a fixed run id only when the unfinished run has that id', async () => {
    const p = paths();
    await openRunStateAndEnd({ ...p, fresh: false, runId: 'replay-1' });
    expect(await openRunStateAndEnd({ ...p, fresh: false, runId: 'replay-1' })).toMatchObject({ resumed: true });
    expect(await openRunStateAndEnd({ ...p, fresh: false, runId: 'replay-2' })).toMatchObject({
      resumed: false,
      runId: 'replay-2',
    });
  });

  it('takes the state lock first: while a run holds it, another fails naming it and leaves its downloads alone', async () => {
    const p = paths();
    const first = await openRunState({ ...p, fresh: false });
    mkdirSync(p.tmpDir, { recursive: true });
    writeFileSync(path.join(p.tmpDir, 'part.jsonl'), '{}\n');
    const err = await openRunState({ ...p, fresh: true }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LockedError);
    expect((err as LockedError).message).toContain(`pid ${process.pid}`);
    expect(existsSync(path.join(p.tmpDir, 'part.jsonl'))).toBe(true);
    expect(first.state.get('run:id')).toBe(first.runId);
    await first.lock.release();
    expect(existsSync(p.lockFile)).toBe(false);
    expect((await openRunStateAndEnd({ ...p, fresh: false })).resumed).toBe(true);
  });

  it('deletes downloads a killed run left behind', async () => {
    const p = paths();
    mkdirSync(p.tmpDir, { recursive: true });
    writeFileSync(path.join(p.tmpDir, 'part.jsonl'), '{}\n');
    await openRunStateAndEnd({ ...p, fresh: false });
    expect(existsSync(p.tmpDir)).toBe(false);
  });
});
