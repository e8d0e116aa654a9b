import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { newRunId, runStartedAt } from '../../src/state/run-id.js';
import { forgetKept, openRunState, type RunState, type RunStateOptions } from '../../src/state/run-state.js';
import { tempDir } from '../support/in-memory.js';

type Paths = Pick<RunStateOptions, 'stateFile' | 'tmpDir'>;

function paths(): Paths {
  const dir = tempDir();
  return { stateFile: path.join(dir, 'state.json'), tmpDir: path.join(dir, 'tmp') };
}

/** Opens the state as a run would (its lock is the runtime's: test/runtime/runtime.test.ts). */
function openRunStateAndEnd(opts: RunStateOptions): Promise<RunState> {
  return openRunState(opts);
}

describe('openRunState', () => {
  it('starts a new run with a new id and keeps it in the state file', async () => {
    const p = paths();
    const first = await openRunStateAndEnd({ ...p, fresh: false });
    expect(first.resumed).toBe(false);
    expect(first.runId).toMatch(/^\d{17}-[0-9a-f]{6}$/);
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

  it('a new run keeps what earlier runs kept (`kept:`) and forgets the rest; starting over forgets that too', async () => {
    const p = paths();
    const first = await openRunStateAndEnd({ ...p, fresh: false });
    await first.state.set('kept:reviews:places', { q: { fids: ['0x1:0x2'], searched_at: '2025-03-01T02:30:00Z' } });
    await first.state.set('reviews:discovered', { a: [0] });
    await first.state.set('run:complete', true);
    const second = await openRunStateAndEnd({ ...p, fresh: false });
    expect(second.resumed).toBe(false);
    expect(second.state.keys().sort()).toEqual(['kept:reviews:places', 'run:id']);
    await forgetKept(second.state);
    expect(second.state.keys()).toEqual(['run:id']);
  });

  it('a fresh run over an unfinished one hands back that run’s ledger, for its crashed line', async () => {
    const p = paths();
    const first = await openRunStateAndEnd({ ...p, fresh: false });
    await first.state.set('run:paid', { lines: [], open: [] });
    const fresh = await openRunStateAndEnd({ ...p, fresh: true });
    expect(fresh.replaced).toEqual({ runId: first.runId, paid: { lines: [], open: [] } });
    expect(fresh.state.get('run:paid')).toBeUndefined();
  });

  it('deletes downloads a killed run left behind', async () => {
    const p = paths();
    mkdirSync(p.tmpDir, { recursive: true });
    writeFileSync(path.join(p.tmpDir, 'part.jsonl'), '{}\n');
    await openRunStateAndEnd({ ...p, fresh: false });
    expect(existsSync(p.tmpDir)).toBe(false);
  });
});

describe('run ids', () => {
  // The cursor keeps the newest run's checkpoint of a unit by sorting run ids (runtime/cursor.ts): ids that sorted by
  // their random suffix within a second made a file source compare a file with the older of two loads (seen in
  // test/e2e/incremental-files.test.ts, whose nights run well within one second).
  it('sort after the previous run’s id when runs start in one millisecond, or the clock went back', () => {
    const t = new Date('2026-11-24T05:03:12.345Z');
    for (let i = 0; i < 20; i++) {
      const first = newRunId(t);
      const same = newRunId(t, first);
      const back = newRunId(new Date(t.getTime() - 60_000), same);
      expect([first, same, back].sort()).toEqual([first, same, back]);
      expect(new Set([first, same, back]).size).toBe(3);
    }
    expect(runStartedAt(newRunId(t))).toEqual(t);
  });

  it('sort after an id of an earlier version (to the second), which still tells when its run started', () => {
    const old = '20261124050312-f0f0f0';
    expect(runStartedAt(old)).toEqual(new Date('2026-11-24T05:03:12Z'));
    for (const now of ['2026-11-24T05:03:12.000Z', '2026-11-24T05:03:11.999Z', '2026-11-24T05:03:12.999Z']) {
      const next = newRunId(new Date(now), old);
      expect(next > old, `${next} after ${old}`).toBe(true);
    }
  });

  it('a new run started right after the last one, in the same second, gets an id that sorts after it', async () => {
    const p = paths();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const opened = await openRunStateAndEnd({ ...p, fresh: false });
      await opened.state.set('run:complete', true);
      ids.push(opened.runId);
    }
    expect([...ids].sort()).toEqual(ids);
  });
});
