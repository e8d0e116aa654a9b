/**
 * Worker-thread entry of the crawl benchmark: runs the emulator on its own thread, so the benchmark times the crawl
 * source and client rather than the emulator generating pages on the same event loop. It posts the emulator's URL,
 * and closes it when told `close`. (An entry point: starting the server on load is its purpose.)
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { EmulatorOptions } from '../src/emulator/context.js';
import { startEmulator } from '../src/emulator/server.js';

const emu = await startEmulator(workerData as Partial<EmulatorOptions>);
parentPort!.on('message', (msg: unknown) => {
  // In a worker, process.exit ends this thread only.
  if (msg === 'close') void emu.close().then(() => process.exit(0));
});
parentPort!.postMessage({ url: emu.url });
