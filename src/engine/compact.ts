/**
 * `sluice compact`: every file sink of a pipeline rewrites its small published files into target-size ones
 * (sinks/output-files/compact.ts), under the pipeline's run lock and its outputs' locks, taken without waiting: a
 * run in progress refuses the compaction at once (LockedError, exit 3), as it refuses a second run.
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { EXIT_CODES, SluiceError } from '../core/errors.js';
import type { CompactSummary, Logger, Sink, SinkContext } from '../core/types.js';
import type { LoadedPipeline } from '../pipeline/load.js';
import { buildComponents } from './components.js';
import { pipelinePaths } from './paths.js';
import { acquireRunLock } from './run-lock.js';
import { lockOutputs, releaseLocks } from './stages/lock-outputs.js';

export interface SinkCompaction extends CompactSummary {
  /** The sink's `describe()`. */
  sink: string;
}

export async function compactPipeline(
  pipeline: LoadedPipeline,
  opts: { log: Logger; command: string },
): Promise<SinkCompaction[]> {
  const noService = (): never => {
    throw new SluiceError('sluice compact does not call the service', { hint: 'this is a bug: please report it' });
  };
  const built = buildComponents(pipeline.config, { log: opts.log, baseDir: pipeline.baseDir, client: noService });
  const sinks = built.sinks.map((s) => s.sink).filter((s): s is Sink & Required<Pick<Sink, 'compact'>> => !!s.compact);
  if (sinks.length === 0)
    throw new SluiceError(`${pipeline.name}: no sink of the pipeline writes files to compact`, {
      hint: 'compaction rewrites the files of parquet and jsonl sinks; tables (duckdb, postgres) need none',
      exitCode: EXIT_CODES.config,
    });
  const lockFile = pipelinePaths(pipeline).lockFile;
  const lockOptions = { command: opts.command, log: opts.log, waitMs: 0 };
  await mkdir(path.dirname(lockFile), { recursive: true });
  const locks = [await acquireRunLock(lockFile, lockOptions)];
  try {
    locks.push(...(await lockOutputs(sinks, pipeline.baseDir, lockOptions)));
    const ctx: SinkContext = {
      log: opts.log,
      deadLetter: () => undefined,
      baseDir: pipeline.baseDir,
      pipeline: pipeline.name,
      fresh: false,
    };
    const out: SinkCompaction[] = [];
    for (const s of sinks) out.push({ sink: s.describe(), ...(await s.compact(ctx)) });
    return out;
  } finally {
    await releaseLocks(locks, opts.log);
  }
}
