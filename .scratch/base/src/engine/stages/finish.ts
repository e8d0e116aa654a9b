/**
 * Stage 5, finish: once every unit committed, the sinks finish (a `replace` swaps its new generation in) and the
 * run is marked complete, so the next invocation starts a new run. Then, whatever happened, everything opened is
 * closed: a failure to close the dead-letter file fails the run (letters would be lost), a sink's only warns.
 */
import { failpoint } from '../../core/failpoints.js';
import type { Logger, Sink, Source, StateStore } from '../../core/types.js';
import { errorText } from '../error-text.js';

export async function finishRun(sinks: readonly Sink[], state: StateStore): Promise<void> {
  for (const s of sinks) await s.finish();
  failpoint('engine:before-complete');
  await state.set('run:complete', true);
}

export interface Closable {
  close(): Promise<void>;
}

export interface CloseRunOptions {
  source: Source;
  sinks: readonly Sink[];
  deadLetters: Closable;
  service: Closable;
  log: Logger;
}

/** Closes everything; returns the failure that must fail the run, if any. */
export async function closeRun(opts: CloseRunOptions): Promise<unknown> {
  let failure: unknown;
  await opts.source.close?.().catch(() => undefined);
  for (const s of opts.sinks) await s.close().catch((e: unknown) => opts.log.warn(`closing sink: ${errorText(e)}`));
  await opts.deadLetters.close().catch((e: unknown) => (failure = e));
  await opts.service.close();
  return failure;
}
