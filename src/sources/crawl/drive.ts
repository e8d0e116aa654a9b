/**
 * Runs a crawl source the way the engine does — plan, read each unit, then schedule what `discover` returns —
 * without transforms or sinks. The crawl benchmark uses it to time the source alone, and tests use it to stop a
 * crawl half-way and resume it.
 */
import pLimit from 'p-limit';
import type { Row, Source, SourceContext, WorkUnit } from '../../core/types.js';

export interface DriveOptions {
  /** Units read at once (the engine uses the source's `concurrency`). */
  concurrency: number;
  /** Units committed by an earlier run: not read again, but `discover` is asked about them as the engine does. */
  committed?: ReadonlySet<string>;
  /** Stop scheduling after this many units committed in this drive (simulates a crash part-way). */
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

export async function driveCrawl(source: Source, ctx: SourceContext, opts: DriveOptions): Promise<DriveResult> {
  const started = performance.now();
  const result: DriveResult = { committed: [], rows: new Map(), skipped: [], durationMs: 0 };
  const limit = pLimit(Math.max(1, opts.concurrency));
  const scheduled = new Set<string>();
  const running: Promise<void>[] = [];
  const stopped = (): boolean =>
    result.error !== undefined || (opts.stopAfter !== undefined && result.committed.length >= opts.stopAfter);

  const schedule = (u: WorkUnit): void => {
    if (scheduled.has(u.id)) return;
    scheduled.add(u.id);
    if (opts.committed?.has(u.id)) {
      result.skipped.push(u.id);
      for (const next of source.discover?.(u, ctx) ?? []) schedule(next);
      return;
    }
    running.push(
      limit(async () => {
        if (stopped()) return;
        try {
          const rows: Row[] = [];
          for await (const batch of source.read(u, ctx)) rows.push(...batch);
          if (stopped()) return; // crashed before this unit's commit
          result.rows.set(u.id, rows);
          result.committed.push(u.id);
          for (const next of source.discover?.(u, ctx) ?? []) schedule(next);
        } catch (err) {
          result.error ??= err;
        }
      }),
    );
  };

  for (const u of await source.plan(ctx)) schedule(u);
  while (running.length > 0) await Promise.all(running.splice(0));
  result.durationMs = performance.now() - started;
  return result;
}
