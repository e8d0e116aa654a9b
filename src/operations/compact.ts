/**
 * `sluice compact`: every file sink of a pipeline rewrites its small published files into target-size ones
 * (src/sink-kit/output-files/compact.ts), under the pipeline's run lock and its outputs' locks, taken without waiting: a
 * run in progress refuses the compaction at once (LockedError, exit 3), as it refuses a second run.
 */
import { EXIT_CODES, SluiceError } from '../core/errors.js';
import type { CompactSummary, Logger } from '../core/types.js';
import type { LoadedPipeline } from '../pipeline/load.js';
import { withRuntime } from '../runtime/runtime.js';

export interface SinkCompaction extends CompactSummary {
  /** The sink's `describe()`. */
  sink: string;
}

export function compactPipeline(
  pipeline: LoadedPipeline,
  opts: { log: Logger; command: string },
): Promise<SinkCompaction[]> {
  return withRuntime(pipeline, { ...opts, noService: true }, async (rt) => {
    const outputs = rt.sinkList.flatMap((s) =>
      s.capabilities.files ? [{ sink: s, files: s.capabilities.files }] : [],
    );
    if (outputs.length === 0)
      throw new SluiceError(`${pipeline.name}: no sink of the pipeline writes files to compact`, {
        hint: 'compaction rewrites the files of parquet and jsonl sinks; tables (duckdb, postgres) need none',
        exitCode: EXIT_CODES.config,
      });
    await rt.lockPipeline();
    await rt.lockOutputs();
    const out: SinkCompaction[] = [];
    for (const { sink, files } of outputs)
      out.push({ sink: sink.describe(), ...(await files.compact(rt.sinkContext())) });
    return out;
  });
}
