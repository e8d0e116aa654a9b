/**
 * Runs a bare source the way the engine does — plan, then the shared scheduler (engine/scheduler.ts) reads each unit
 * and follows what `discover` returns — without transforms or sinks. The crawl benchmark uses it to time the source
 * alone, and tests use it to stop a crawl half-way and resume it.
 */
import type { Row, Source, SourceContext } from '../../src/core/types.js';
import { scheduleUnits } from '../../src/engine/scheduler.js';

export interface DriveOptions {
  /** Units read at once; default the source's own `concurrency` (as the engine does), else 4. */
  concurrency?: number;
  /** Units committed by an earlier run: not read again, but `discover` is asked about them as the engine does. */
  committed?: ReadonlySet<string>;
  /** Stop after this many units committed in this drive (simulates a crash part-way). */
  stopAfter?: number;
}

export interface DriveResult {
  /** Units committed by this drive, in commit order. */
  committed: string[];
  /** Each committed unit's rows. */
  rows: Map<string, Row[]>;
  /** Units the drive skipped as committed earlier. */
  skipped: string[];
  /** The first unit failure, if any (the drive stops scheduling after it). */
  error?: unknown;
  durationMs: number;
}

export async function driveCrawl(source: Source, ctx: SourceContext, opts: DriveOptions = {}): Promise<DriveResult> {
  const started = performance.now();
  const result: DriveResult = { committed: [], rows: new Map(), skipped: [], durationMs: 0 };
  const crashed = (): boolean => opts.stopAfter !== undefined && result.committed.length >= opts.stopAfter;
  const scheduled = await scheduleUnits(await source.plan(ctx), {
    concurrency: opts.concurrency ?? source.concurrency ?? 4,
    isCommitted: (u) => opts.committed?.has(u.id) ?? false,
    run: async (u) => {
      const rows: Row[] = [];
      for await (const batch of source.read(u, ctx)) rows.push(...batch);
      // Units still in flight when the "crash" happens never commit.
      if (crashed()) return;
      result.rows.set(u.id, rows);
      result.committed.push(u.id);
    },
    discover: (u) => source.discover?.(u, ctx) ?? [],
    stopped: crashed,
    onSkipped: (u) => result.skipped.push(u.id),
  });
  if (scheduled.failure !== undefined) result.error = scheduled.failure;
  result.durationMs = performance.now() - started;
  return result;
}
