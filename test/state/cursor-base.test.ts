/** Cursor changes by hand applied to the sinks' checkpoints (`rebase`), and their file. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkpointsOf, committedList } from '../../src/runtime/cursor.js';
import { addCursorBase, cursorBaseFile, readCursorBase, rebase } from '../../src/state/cursor-base.js';

const effectiveCheckpoints = (perSink: Map<string, unknown>[]): Map<string, unknown> =>
  checkpointsOf(committedList(perSink));

const cp = (max: number): unknown => ({ cursor: 'ts', max });
const sinkA = new Map([
  ['r1/p1', cp(1)],
  ['r3/p1', cp(3)],
]);
const sinkB = new Map([
  ['r1/p1', cp(1)],
  ['r3/p1', cp(3)],
]);

describe('rebase', () => {
  it('a set replaces what runs before it committed; runs after it count on top', () => {
    const set = { since: 'r2', checkpoints: { 'state-set': cp(2) } };
    expect([...effectiveCheckpoints(rebase([sinkA, sinkB], [set])).values()]).toEqual([cp(2), cp(3)]);
    const later = { since: 'r4', checkpoints: { 'state-set': cp(0) } };
    expect([...effectiveCheckpoints(rebase([sinkA, sinkB], [set, later])).values()]).toEqual([cp(0)]);
  });

  it('a reset of one sink forgets its checkpoints, and with them the cursor every sink committed', () => {
    const rebased = rebase([sinkA, sinkB], [{ since: 'r2', sinks: [1] }]);
    expect([...rebased[0]!.keys()]).toEqual(['r1/p1', 'r3/p1']);
    expect([...rebased[1]!.keys()]).toEqual(['r3/p1']);
    expect([...effectiveCheckpoints(rebased).keys()]).toEqual(['p1']);
    expect(effectiveCheckpoints(rebased).get('p1')).toEqual(cp(3));
    // After a set, a reset of one sink forgets the set for that sink, so for the cursor too.
    const both = rebase(
      [sinkA, sinkB],
      [
        { since: 'r4', checkpoints: { s: cp(9) } },
        { since: 'r5', sinks: [0] },
      ],
    );
    expect(effectiveCheckpoints(both).size).toBe(0);
  });
});

describe('the cursor changes file', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'sluice-cursor-base-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('keeps entries in order; a file changed outside sluice is an error saying what to do', async () => {
    expect(await readCursorBase(dir)).toEqual([]);
    await addCursorBase(dir, { since: 'a', sinks: [0] });
    await addCursorBase(dir, { since: 'b' });
    expect(await readCursorBase(dir)).toEqual([{ since: 'a', sinks: [0] }, { since: 'b' }]);
    writeFileSync(cursorBaseFile(dir), '{"entries": 1}');
    await expect(readCursorBase(dir)).rejects.toMatchObject({ hint: expect.stringContaining('delete it') });
  });
});
