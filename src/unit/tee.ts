/**
 * Fan one stream of batches out to several consumers (sinks) without buffering the whole unit: the producer waits
 * while any consumer is `highWater` batches behind, so the slowest sink sets the pace (backpressure).
 */
import type { Batch } from '../core/types.js';

export function tee(source: AsyncIterable<Batch>, count: number, highWater = 4): AsyncIterable<Batch>[] {
  if (count === 1) return [source];
  const queues: Batch[][] = Array.from({ length: count }, () => []);
  const waiters: ((() => void) | undefined)[] = Array.from({ length: count }, () => undefined);
  const cancelled: boolean[] = Array.from({ length: count }, () => false);
  let done = false;
  let error: unknown;
  let producerWake: (() => void) | undefined;
  let started = false;

  const wakeConsumers = (): void => {
    waiters.forEach((w, i) => {
      if (w) {
        waiters[i] = undefined;
        w();
      }
    });
  };
  const behind = (): boolean => queues.some((q, i) => !cancelled[i] && q.length >= highWater);

  const produce = async (): Promise<void> => {
    try {
      for await (const batch of source) {
        queues.forEach((q, i) => {
          if (!cancelled[i]) q.push(batch);
        });
        wakeConsumers();
        while (behind()) await new Promise<void>((r) => (producerWake = r));
        if (cancelled.every(Boolean)) break;
      }
    } catch (err) {
      error = err;
    } finally {
      done = true;
      wakeConsumers();
    }
  };

  return queues.map((q, i) => ({
    [Symbol.asyncIterator](): AsyncIterator<Batch> {
      if (!started) {
        started = true;
        void produce();
      }
      return {
        async next(): Promise<IteratorResult<Batch>> {
          while (q.length === 0) {
            if (done) {
              if (error !== undefined) throw error;
              return { done: true, value: undefined };
            }
            await new Promise<void>((r) => (waiters[i] = r));
          }
          const value = q.shift() as Batch;
          if (producerWake && !behind()) {
            const w = producerWake;
            producerWake = undefined;
            w();
          }
          return { done: false, value };
        },
        async return(): Promise<IteratorResult<Batch>> {
          cancelled[i] = true;
          q.length = 0;
          producerWake?.();
          return { done: true, value: undefined };
        },
      };
    },
  }));
}
