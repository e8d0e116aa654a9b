/**
 * Backfills of the incremental crawls (`sluice run <p> --from <date>`), a run of their own whose rows merge into the
 * same tables (the engine refuses append and replace outputs: operations/backfill.ts):
 *
 * - a review crawl (`incremental: true`) reloads, for every place, the reviews dated after `--from`: it reads the
 *   place's pages from the first until a review dated at or before `--from`, whatever earlier runs committed. Its
 *   checkpoints are marked with the window and leave the nightly newest dates alone unless the window joins them
 *   (review-pages.ts, `reviewsIncremental`).
 * - a SERP crawl with `refresh_after` refetches now every query last fetched before `--from` (a date after the last
 *   fetch: every query). Its fetch times count for `refresh_after` as any fetch's do: the refetch is the fresh copy.
 *
 * Only `--from`: both crawls read newest first (reviews) or now (SERP), so a window cannot end before today.
 */
import { EXIT_CODES, SluiceError } from '../../core/errors.js';
import type { BackfillWindow } from '../../core/types.js';
import { readCursorValue } from '../cursor-value.js';

function refused(message: string, hint: string): SluiceError {
  return new SluiceError(message, { hint, exitCode: EXIT_CODES.config });
}

/** `--from` as a time (cursor-value.ts: canonical, UTC), `--to` refused; `of` names what is compared. */
function crawlWindow(of: string, raw: { from: string; to?: string }, what: string): BackfillWindow {
  if (raw.to !== undefined)
    throw refused(
      `--to: a backfill of ${what} has no end: the pages are read as the service shows them now`,
      `run without --to: \`--from <date>\` reloads ${what} after that date up to now`,
    );
  const from = readCursorValue(raw.from, 'time');
  if ('problem' in from)
    throw refused(
      `--from ${JSON.stringify(raw.from)}: ${from.problem}; a backfill of ${what} starts after a date`,
      'give --from a date or a time with its offset, e.g. --from 2025-03-01 (midnight UTC) or --from 2025-03-01T06:00:00Z',
    );
  return { of, from: from.value };
}

/** `ComponentDef.backfill` of the review crawl. */
export function reviewsBackfill(cfg: { incremental: boolean }, raw: { from: string; to?: string }): BackfillWindow {
  if (!cfg.incremental)
    throw refused(
      '--from: this review crawl is not incremental (no `incremental: true`): every run reloads every review it pages through',
      'run without --from, or set `incremental: true` (with `sort: newestFirst`) and `write: merge` with `primary_key: [review_id]` on the sink',
    );
  return crawlWindow('date', raw, "the places' reviews");
}

/** `ComponentDef.backfill` of the SERP crawl. */
export function serpBackfill(cfg: { refresh_after?: string }, raw: { from: string; to?: string }): BackfillWindow {
  if (cfg.refresh_after === undefined)
    throw refused(
      '--from: this SERP crawl has no `refresh_after`: every run fetches every query already',
      'run without --from; or set `refresh_after` (e.g. 7d) to fetch each query once a period, and --from to refetch them sooner',
    );
  return crawlWindow('fetched_at', raw, 'the queries');
}
