/**
 * The scheduler's two bounds (src/unit/scheduler.ts): `concurrency` units reading at once, and up to `committing`
 * units that said their reading is over (`read()`) waiting to commit while the next ones read.
 */
import { describe, expect, it } from 'vitest';
import type { WorkUnit } from '../../src/core/types.js';
import { scheduleUnits } from '../../src/unit/scheduler.js';

const units = (n: number): WorkUnit[] => Array.from({ length: n }, (_, i) => ({ id: `u${i}`, params: {} }));

/** Each unit's run, held open by the test: `read()` said, then `commit()` ends it. */
interface Held {
  read(): void;
  commit(): void;
}

function harness(concurrency: number, committing?: number) {
  const started: string[] = [];
  const held = new Map<string, Held>();
  const done = scheduleUnits(units(4), {
    concurrency,
    ...(committing !== undefined && { committing }),
    isCommitted: () => false,
    run: (u, read) =>
      new Promise<void>((resolve) => {
        started.push(u.id);
        held.set(u.id, { read, commit: resolve });
      }),
  });
  return { started, held, done };
}

/** Lets every promise callback queued so far run (the scheduler's queues hand places on through several). */
const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('scheduleUnits: reading and committing bounded apart', () => {
  it('by default a unit holds its place until it has committed, whatever it says of its reading', async () => {
    const { started, held, done } = harness(1);
    await tick();
    expect(started).toEqual(['u0']);
    held.get('u0')!.read();
    await tick();
    expect(started).toEqual(['u0']);
    held.get('u0')!.commit();
    await tick();
    expect(started).toEqual(['u0', 'u1']);
    for (const id of ['u1', 'u2', 'u3']) {
      await tick();
      held.get(id)!.commit();
    }
    expect((await done).committed).toBe(4);
  });

  it('a unit done reading lets the next read while it commits, up to `committing` such units', async () => {
    const { started, held, done } = harness(1, 2);
    await tick();
    held.get('u0')!.read();
    await tick();
    expect(started).toEqual(['u0', 'u1']);
    held.get('u1')!.read();
    await tick();
    expect(started).toEqual(['u0', 'u1', 'u2']);
    // Two already wait to commit: the third stays a reader, and the fourth waits for a place…
    held.get('u2')!.read();
    await tick();
    expect(started).toEqual(['u0', 'u1', 'u2']);
    // …until a committer's place frees up: the third takes it, and the fourth starts reading.
    held.get('u0')!.commit();
    await tick();
    expect(started).toEqual(['u0', 'u1', 'u2', 'u3']);
    for (const id of ['u1', 'u2', 'u3']) held.get(id)!.commit();
    expect(await done).toMatchObject({ committed: 4, failed: 0 });
  });
});
