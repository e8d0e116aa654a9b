/**
 * What the report shows besides the history: the cursor the sinks committed and the size of each output. Both are
 * read as `sluice state` and `--show` read them (under the pipeline's locks; through DuckDB) and both are extras: a
 * run holding the lock, a database that cannot be reached, becomes a note on the page, never a failed report.
 */
import type { Logger } from '../../core/types.js';
import type { LoadedPipeline } from '../../pipeline/load.js';
import type { CursorInfo, OutputInfo } from './page.js';

const quiet: Logger = { debug() {}, info() {}, warn() {}, error() {} };

const firstLine = (err: unknown): string => (err instanceof Error ? err.message : String(err)).split('\n')[0]!;

/** Where the next run starts, as `sluice state` tells it (the same function): the value a `state set` set included. */
export async function readCursor(pipeline: LoadedPipeline): Promise<CursorInfo> {
  const { readState } = await import('../../operations/state.js');
  const command = `sluice report ${pipeline.file}`;
  try {
    const s = await readState({ pipeline, log: quiet, command });
    const newest = s.effective[s.effective.length - 1];
    return {
      source: s.source,
      incremental: s.incremental,
      ...(s.incremental && { units: s.effective.length }),
      ...(newest && { newest }),
      ...(s.field !== undefined && { field: s.field }),
      ...(s.cursor !== undefined ? { cursor: s.cursor } : s.initial !== undefined && { cursor: s.initial }),
      ...(s.changes > 0 && { changes: s.changes }),
    };
  } catch (err) {
    // A run holding the pipeline's lock, a database that cannot be reached: a note on the page, not a failed report.
    const source = String((pipeline.config.source as { type: unknown }).type);
    return { source, incremental: true, note: `cursor not read: ${firstLine(err)}` };
  }
}

export async function readOutputs(pipeline: LoadedPipeline): Promise<OutputInfo[]> {
  const { countRows, withOutputs } = await import('../../operations/outputs.js');
  return withOutputs(pipeline, { log: quiet, command: `sluice report ${pipeline.file}` }, async (sinks) => {
    const out: OutputInfo[] = [];
    for (const sink of sinks) {
      const name = sink.describe();
      // A count that reads every row (JSONL, a Postgres scan) is not the report's to start.
      if (!sink.outputQuery(0).countIsCheap) {
        out.push({ sink: name, note: 'not counted here (it would read the whole output)' });
        continue;
      }
      try {
        const rows = await countRows(sink);
        out.push({ sink: name, rows, ...(rows === 0 && { note: 'nothing written yet' }) });
      } catch (err) {
        out.push({ sink: name, note: firstLine(err) });
      }
    }
    return out;
  });
}
