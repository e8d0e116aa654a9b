/**
 * `--show N`: the first rows of every output of a pipeline (read back by operations/outputs.ts), one JSON object per
 * row with long text shortened.
 */
import type { Logger } from '../core/types.js';
import type { LoadedPipeline } from '../pipeline/load.js';
import type { CliIo } from './io.js';

const MAX_TEXT = 60;

const count = (n: number, what: string): string => `${n} ${what}${n === 1 ? '' : 's'}`;

/** One screen line per row, roughly: long text is cut, nested values that would run long are summarised. */
function shorten(row: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(row)) {
    if (typeof v === 'string') out[k] = v.length > MAX_TEXT ? v.slice(0, MAX_TEXT) + '…' : v;
    else if (v !== null && typeof v === 'object' && JSON.stringify(v).length > MAX_TEXT)
      out[k] = Array.isArray(v) ? `[${count(v.length, 'item')}]` : `{${count(Object.keys(v).length, 'field')}}`;
    else out[k] = v;
  }
  return out;
}

const quiet: Logger = { debug() {}, info() {}, warn() {}, error() {} };

export async function showOutputs(io: CliIo, pipeline: LoadedPipeline, limit: number): Promise<void> {
  const { firstRows, withOutputs } = await import('../operations/outputs.js');
  await withOutputs(pipeline, { log: quiet, command: `sluice run ${pipeline.file} --show` }, async (sinks) => {
    for (const sink of sinks) {
      io.out(`\n== ${sink.describe()}: first ${limit} row${limit === 1 ? '' : 's'}`);
      try {
        const rows = await firstRows(sink, limit);
        if (rows.length === 0) io.out('(no rows)');
        for (const row of rows) io.out(JSON.stringify(shorten(row)));
      } catch (err) {
        // Showing is a courtesy after a successful run: a failure to read back is reported, not fatal.
        io.err(`warn: cannot show ${sink.describe()}: ${(err as Error).message.split('\n')[0]}`);
      }
    }
  });
}
