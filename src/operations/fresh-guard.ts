/**
 * `--fresh` starts a new run that reads every unit again. Into an output that appends (`write: append`, whatever
 * the sink) and already holds units earlier runs committed, that loads those records a second time beside the
 * first: a 50-line file became 100 rows without a word. So the run refuses before anything is paid or written,
 * naming each such output and what it holds, unless the user confirms (`--allow-duplicates`).
 *
 * The engine asks each sink the one question every sink answers (`committedUnits()`) and reads the `write`
 * disposition every sink's config declares with one meaning (core/sharded-replace.ts reads it the same way): it
 * never asks which kind of sink it is. A sink without `write` (one that cannot append twice) is not asked.
 */
import { EXIT_CODES, SluiceError } from '../core/errors.js';
import type { Sink } from '../core/types.js';

export interface FreshOutput {
  sink: Sink;
  /** The sink config's `write` (defaults applied). */
  write: unknown;
}

interface Held {
  sink: string;
  units: number;
  runs: string[];
}

/** Throws (exit code 2) when `--fresh` would append units again into outputs holding earlier runs' commits. */
export async function refuseFreshDuplicates(outputs: readonly FreshOutput[], runId: string): Promise<void> {
  const held: Held[] = [];
  for (const { sink, write } of outputs) {
    if (write !== 'append') continue;
    // Sinks see `<run>/<unit>` ids (unit/run-units.ts); ids of versions before that have no run.
    const earlier = [...(await sink.committedUnits())].filter((id) => !id.startsWith(`${runId}/`));
    if (earlier.length === 0) continue;
    const runs = [...new Set(earlier.map((id) => (id.includes('/') ? id.slice(0, id.indexOf('/')) : '?')))].sort();
    held.push({ sink: sink.describe(), units: earlier.length, runs });
  }
  if (held.length === 0) return;
  const lines = held.map(
    (h) =>
      `  ${h.sink} (write: append) holds ${h.units} unit(s) committed by ${h.runs.length} earlier run(s)` +
      (h.runs.at(-1) !== '?' ? `, the last ${h.runs.at(-1)}` : ''),
  );
  throw new SluiceError(
    `--fresh would read every unit again and append its records a second time beside those already loaded:\n${lines.join('\n')}`,
    {
      exitCode: EXIT_CODES.config,
      hint:
        'to resume the unfinished run (or load only what is new), run without --fresh; to start the output over, set ' +
        '`write: replace` on the sink (the new load replaces the old when the run finishes), or `write: merge` with a ' +
        '`primary_key` where the sink offers it; to load everything again beside the old rows on purpose, add --allow-duplicates',
    },
  );
}
