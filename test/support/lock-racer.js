/**
 * A process that races for run locks on command (test/engine/run-lock-race.test.ts), over IPC:
 * - `{ race: file, at }`: at `at` (epoch ms; the racers spin for the last milliseconds so they start together) try
 *   to take `file` without waiting; answer `{ held }` and keep a lock taken until `{ release: true }`.
 * - `{ release: true }`: release what is held; answer `{ released: true }`.
 * Plain JavaScript over the compiled module (dist/, built by test/global-setup.ts from the source under test): a
 * process starts in a tenth of the time tsx takes.
 */
/* global process, setTimeout */
import { acquireRunLock } from '../../dist/src/state/run-lock.js';

const quiet = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };
let lock;

process.on('message', (m) => {
  void (async () => {
    if (m.release) {
      await lock?.release();
      lock = undefined;
      process.send({ released: true });
      return;
    }
    // Sleep to just before the start, then spin: a timer alone lands a millisecond or more apart per process.
    const wait = m.at - Date.now() - 3;
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    while (Date.now() < m.at);
    try {
      lock = await acquireRunLock(m.race, { command: `racer ${process.pid}`, log: quiet, waitMs: 0 });
      process.send({ held: true });
    } catch (err) {
      process.send({ held: false, ...(err.name !== 'LockedError' && { error: String(err) }) });
    }
  })();
});
process.send({ ready: true });
