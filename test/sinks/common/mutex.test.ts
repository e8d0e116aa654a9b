import { describe, expect, it } from 'vitest';
import { KeyedMutex, Mutex } from '../../../sinks/common/mutex.js';

const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('Mutex', () => {
  it('runs sections one at a time in call order, and survives a failing one', async () => {
    const m = new Mutex();
    const events: string[] = [];
    const section = (name: string, fail = false) =>
      m.run(async () => {
        events.push(`${name}:start`);
        await tick();
        events.push(`${name}:end`);
        if (fail) throw new Error(name);
        return name;
      });
    const results = await Promise.allSettled([section('a'), section('b', true), section('c')]);
    expect(events).toEqual(['a:start', 'a:end', 'b:start', 'b:end', 'c:start', 'c:end']);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
  });

  it('keeps different keys independent', async () => {
    const m = new KeyedMutex();
    const events: string[] = [];
    let release!: () => void;
    const blocked = m.run('a', () => new Promise<void>((r) => (release = r)));
    await m.run('b', async () => void events.push('b ran while a is held'));
    expect(events).toEqual(['b ran while a is held']);
    release();
    await blocked;
  });
});
