/**
 * Runs a bare source the way a run does — plan, then the shared scheduler (unit/scheduler.ts) reads each unit and
 * follows the units each read hands on (`discover` for units committed earlier) — without transforms or sinks. The crawl benchmark uses it to time the source
 * alone, and tests use it to stop a crawl half-way and resume it.
 */
import type { Row, Source, SourceContext } from '../../src/core/types.js';
import { scheduleUnits } from '../../src/unit/scheduler.js';
import { readUnit } from './read-unit.js';

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
  /** Each committed unit's checkpoint, as its read ended with it (incremental crawls). */
  checkpoints: Map<string, unknown>;
  /** Units the drive skipped as committed earlier. */
  skipped: string[];
  /** The first unit failure, if any (the drive stops scheduling after it). */
  error?: unknown;
  durationMs: number;
}

export async function driveCrawl(source: Source, ctx: SourceContext, opts: DriveOptions = {}): Promise<DriveResult> {
  const started = performance.now();
  const result: DriveResult = { committed: [], rows: new Map(), checkpoints: new Map(), skipped: [], durationMs: 0 };
  const crashed = (): boolean => opts.stopAfter !== undefined && result.committed.length >= opts.stopAfter;
  const scheduled = await scheduleUnits(await source.plan(ctx), {
    concurrency: opts.concurrency ?? source.concurrency ?? 4,
    isCommitted: (u) => opts.committed?.has(u.id) ?? false,
    run: async (u) => {
      const { rows, end } = await readUnit(source, u, ctx);
      // Units still in flight when the "crash" happens never commit.
      if (crashed()) return [];
      result.rows.set(u.id, rows);
      if (end.checkpoint !== undefined) result.checkpoints.set(u.id, end.checkpoint);
      result.committed.push(u.id);
      return end.next ?? [];
    },
    discover: (u) => source.discover?.(u, ctx) ?? [],
    stopped: crashed,
    onSkipped: (u) => result.skipped.push(u.id),
  });
  if (scheduled.failure !== undefined) result.error = scheduled.failure;
  result.durationMs = performance.now() - started;
  return result;
}
