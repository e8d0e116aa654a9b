/**
 * Stage 5, finish: once every unit committed, the sinks finish (a `replace` swaps its new generation in) and the
 * run is marked complete, so the next invocation starts a new run. Whatever happened, the run session
 * (run-session.ts) then closes everything the run opened.
 */
import { failpoint } from '../../core/failpoints.js';
import type { Sink, StateStore } from '../../core/types.js';

export async function finishRun(sinks: readonly Sink[], state: StateStore): Promise<void> {
  for (const s of sinks) await s.finish();
  failpoint('engine:before-complete');
  await state.set('run:complete', true);
}
