import { describe, expect, it } from 'vitest';
import { finishRun } from '../../../src/engine/stages/finish.js';
import { MemoryStateStore } from '../../../src/engine/state-store.js';
import { MemorySink } from '../in-memory.js';

describe('finishRun', () => {
  it('finishes every sink, then marks the run complete', async () => {
    const sinks = [new MemorySink('a'), new MemorySink('b')];
    const state = new MemoryStateStore();
    await finishRun(sinks, state);
    expect(sinks.map((s) => s.finished)).toEqual([true, true]);
    expect(state.get('run:complete')).toBe(true);
  });

  it('leaves the run incomplete when a sink cannot finish (the next invocation resumes it)', async () => {
    const sink = new MemorySink('a');
    sink.finish = async () => {
      throw new Error('swap failed');
    };
    const state = new MemoryStateStore();
    await expect(finishRun([sink], state)).rejects.toThrow('swap failed');
    expect(state.get('run:complete')).toBeUndefined();
  });
});
