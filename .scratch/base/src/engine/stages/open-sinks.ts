/**
 * Opening the sinks, once per run before any unit: a sink whose server or link failed meanwhile (a Postgres
 * connection reset, a server restarting) is opened again after the retry policy's wait, as a unit would be read
 * again, rather than failing a whole unattended run over a blip. A sink's `open()` that throws has released what it
 * took (types.ts `Sink.open`), so opening it again starts clean.
 */
import { sleep } from '../../core/sleep.js';
import type { Counters, Logger, Sink, SinkContext } from '../../core/types.js';
import type { RetryPolicy } from '../../core/retry.js';
import { errorText } from '../error-text.js';

export interface OpenSinksOptions {
  retry: RetryPolicy;
  log: Logger;
  counters: Pick<Counters, 'retries'>;
  signal: AbortSignal;
}

export async function openSinks(sinks: readonly Sink[], ctx: SinkContext, opts: OpenSinksOptions): Promise<void> {
  for (const sink of sinks)
    for (let attempt = 1; ; attempt++) {
      try {
        await sink.open(ctx);
        break;
      } catch (err) {
        if (opts.signal.aborted || !opts.retry.shouldRetry(attempt, err)) throw err;
        opts.counters.retries++;
        const delay = opts.retry.delayMs(attempt, err);
        opts.log.warn(`${sink.describe()}: ${errorText(err)}; opening it again in ${Math.round(delay)} ms`, {
          attempt,
        });
        await sleep(delay, opts.signal);
      }
    }
}
