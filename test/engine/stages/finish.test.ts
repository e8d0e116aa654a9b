import { describe, expect, it } from 'vitest';
import { closeRun, finishRun } from '../../../src/engine/stages/finish.js';
import { MemoryStateStore } from '../../../src/engine/state-store.js';
import { MemorySink, MemorySource, recordingLogger } from '../in-memory.js';

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

describe('closeRun', () => {
  const closable = (fail?: Error) => ({
    closed: false,
    async close() {
      this.closed = true;
      if (fail) throw fail;
    },
  });

  it('closes everything; a sink that fails to close only warns', async () => {
    const source = new MemorySource([]);
    const sinks = [new MemorySink('a'), new MemorySink('b')];
    sinks[0]!.closeError = new Error('file busy');
    const log = recordingLogger();
    const [deadLetters, service] = [closable(), closable()];
    expect(await closeRun({ source, sinks, deadLetters, service, log })).toBeUndefined();
    expect([source.closed, ...sinks.map((s) => s.closed), deadLetters.closed, service.closed]).toEqual([
      true,
      true,
      true,
      true,
      true,
    ]);
    expect(log.lines).toContain('warn: closing sink: file busy');
  });

  it('returns the dead-letter file’s failure to close: letters may be lost, so the run fails', async () => {
    const lost = new Error('disk full');
    const failure = await closeRun({
      source: new MemorySource([]),
      sinks: [],
      deadLetters: closable(lost),
      service: closable(),
      log: recordingLogger(),
    });
    expect(failure).toBe(lost);
  });
});
