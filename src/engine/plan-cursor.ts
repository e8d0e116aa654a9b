/**
 * The cursor a run would start from, for `plan`: read from the sinks the way `sluice state` reads it — under the
 * pipeline's and the outputs' locks, sinks opened and closed again. Only when an earlier run left state behind: a
 * first plan must not create the outputs (a DuckDB file, a declared table) just to find them empty. A run holding
 * the lock (or an output that cannot be read) leaves the plan on the initial cursor, with a note saying so.
 */
import { stat } from 'node:fs/promises';
import type { Logger, Sink, Source } from '../core/types.js';
import { errorText } from './error-text.js';
import { effectiveCheckpoints, isIncremental } from './cursor.js';
import { readCursorBase, rebase } from './cursor-base.js';
import type { PipelinePaths } from './paths.js';
import { readSinkCheckpoints } from './read-checkpoints.js';

export async function cursorForPlan(
  source: Source,
  sinks: readonly Sink[],
  opts: {
    paths: PipelinePaths;
    baseDir: string;
    pipeline: string;
    file: string;
    log: Logger;
    note(text: string): void;
  },
): Promise<ReadonlyMap<string, unknown> | undefined> {
  if (!isIncremental(source)) return undefined;
  const ranBefore = await stat(opts.paths.stateFile).then(
    () => true,
    () => false,
  );
  if (!ranBefore) return new Map();
  try {
    const perSink = await readSinkCheckpoints(sinks, {
      lockFile: opts.paths.lockFile,
      baseDir: opts.baseDir,
      pipeline: opts.pipeline,
      command: `sluice plan ${opts.file}`,
      log: opts.log,
    });
    return effectiveCheckpoints(rebase(perSink, await readCursorBase(opts.paths.rootStateDir)));
  } catch (err) {
    opts.note(`the cursor could not be read from the sinks (${errorText(err)}): the plan shows the initial cursor`);
    return undefined;
  }
}
