/**
 * Opening the sinks, once per run before any unit: a sink whose server or link failed meanwhile (a Postgres
 * connection reset, a server restarting) is opened again after the retry policy's wait, as a unit would be read
 * again, rather than failing a whole unattended run over a blip. A sink's `open()` that throws has released what it
 * took (types.ts `Sink.open`), so opening it again starts clean.
 */
import type { Counters, Logger, Sink, SinkContext } from '../../core/types.js';
import { retrying, type RetryPolicy } from '../../core/retry.js';
import { errorText } from '../error-text.js';

export interface OpenSinksOptions {
  retry: RetryPolicy;
  log: Logger;
  counters: Pick<Counters, 'retries'>;
  signal: AbortSignal;
}

export async function openSinks(sinks: readonly Sink[], ctx: SinkContext, opts: OpenSinksOptions): Promise<void> {
  for (const sink of sinks)
    await retrying(() => sink.open(ctx), {
      policy: opts.retry,
      signal: opts.signal,
      onRetry: (attempt, err, delay) => {
        opts.counters.retries++;
        opts.log.warn(`${sink.describe()}: ${errorText(err)}; opening it again in ${Math.round(delay)} ms`, {
          attempt,
        });
      },
    });
}
