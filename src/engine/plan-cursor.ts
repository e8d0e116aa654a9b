/**
 * The cursor a run would start from, for `plan`: read from the sinks the way `sluice state` reads it — under the
 * pipeline's and the outputs' locks, sinks opened and closed again. Only when an earlier run left state behind: a
 * first plan must not create the outputs (a DuckDB file, a declared table) just to find them empty. A run holding
 * the lock (or an output that cannot be read) leaves the plan on the initial cursor, with a note saying so.
 */
import { mkdir, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Logger, Sink, SinkContext, Source } from '../core/types.js';
import { errorText } from './error-text.js';
import { effectiveCheckpoints, isIncremental, sinkCheckpoints } from './cursor.js';
import type { PipelinePaths } from './paths.js';
import { acquireRunLock, type RunLock } from './run-lock.js';
import { lockOutputs, releaseLocks } from './stages/lock-outputs.js';

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
  const lockOptions = { command: `sluice plan ${opts.file}`, log: opts.log, waitMs: 0 };
  const locks: RunLock[] = [];
  const opened: Sink[] = [];
  try {
    await mkdir(path.dirname(opts.paths.lockFile), { recursive: true });
    locks.push(await acquireRunLock(opts.paths.lockFile, lockOptions));
    locks.push(...(await lockOutputs(sinks, opts.baseDir, lockOptions)));
    const ctx: SinkContext = {
      log: opts.log,
      deadLetter: () => undefined,
      baseDir: opts.baseDir,
      pipeline: opts.pipeline,
      fresh: false,
    };
    for (const s of sinks) {
      await s.open(ctx);
      opened.push(s);
    }
    return effectiveCheckpoints(await sinkCheckpoints(sinks));
  } catch (err) {
    opts.note(`the cursor could not be read from the sinks (${errorText(err)}): the plan shows the initial cursor`);
    return undefined;
  } finally {
    for (const s of opened) await s.close().catch(() => undefined);
    await releaseLocks(locks, opts.log);
  }
}
