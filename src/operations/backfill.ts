/**
 * A backfill (`sluice run <p> --from <v> [--to <v>]`): a run of its own that loads a window of the source's cursor
 * again into the same outputs — the source filters the window (`SourceContext.backfill`) and pays for it alone — and
 * leaves the nightly cursor where it was: the source marks its checkpoints as the window's, and counts them for the
 * cursor only where the window joins it (sources/snapshot-cursor.ts).
 *
 * Refused before anything is locked, paid or written (exit 2): a source that cannot backfill or a value it cannot
 * parse (the source's def judges: `ComponentDef.backfill`); an output that appends (`write: append`: the window's
 * records loaded before would appear twice) unless the user confirms (`--allow-duplicates`, as for --fresh); an
 * output that replaces (`write: replace`: it would end up holding the window alone), always.
 *
 * A backfill that did not finish is resumed as the backfill it is — its window is kept in the run's state — by the
 * next `sluice run`, with or without --from: the nightly load follows on the run after. A backfill does not start
 * while another run is unfinished: its paid job and committed units would be given up.
 */
import type { BackfillWindow, Logger, StateStore } from '../core/types.js';
import { describeWindow } from '../core/checkpoint.js';
import { EXIT_CODES, SluiceError } from '../core/errors.js';
import { findDef, registry as defaultRegistry, type Registry } from '../pipeline/registry.js';
import { sinkConfigs } from '../runtime/components.js';

/** Where a backfill run keeps its window, for the attempts that resume it. */
export const BACKFILL_KEY = 'run:backfill';

export interface BackfillRequest {
  /** `--from`, `--to` as typed. */
  from: string;
  to?: string;
  /** `--allow-duplicates`: load into `write: append` outputs anyway. */
  allowDuplicates?: boolean;
}

function refused(message: string, hint: string): SluiceError {
  return new SluiceError(message, { hint, exitCode: EXIT_CODES.config });
}

/** The window a backfill loads, checked against the pipeline's config; throws (exit 2) where it cannot be loaded. */
export function backfillWindow(
  config: { source: { type: string }; sink?: unknown; sinks?: unknown[] },
  request: BackfillRequest,
  registry: Registry = defaultRegistry,
): BackfillWindow {
  const def = findDef('source', config.source.type, registry);
  if (def.backfill === undefined)
    throw refused(
      `--from: a ${config.source.type} source cannot backfill a window; backfills are for snapshot sources with \`incremental: { cursor }\`, review crawls with \`incremental: true\` and SERP crawls with \`refresh_after\``,
      'run without --from (and --to); `--reset-cursor` starts an incremental source over',
    );
  const window = def.backfill(config.source, {
    from: request.from,
    ...(request.to !== undefined && { to: request.to }),
  });
  for (const s of sinkConfigs(config)) {
    const where = ['table', 'path', 'prefix'].map((k) => s[k]).find((v) => typeof v === 'string');
    const sink = `the ${s.type} sink${where !== undefined ? ` (${String(where)})` : ''}`;
    if (s.write === 'replace')
      throw refused(
        `--from: ${sink} has \`write: replace\`: the backfill would replace everything it holds by the window's records alone`,
        "backfill into a sink with `write: merge` and a `primary_key` (the window's records replace their earlier versions)",
      );
    if (s.write === 'append' && request.allowDuplicates !== true)
      throw refused(
        `--from: ${sink} has \`write: append\`: the window's records it already holds would be appended a second time`,
        'set `write: merge` with a `primary_key` on the sink (the window then replaces its earlier rows), ' +
          'or add --allow-duplicates to append them again on purpose',
      );
  }
  return window;
}

/**
 * The window this run loads, once its state is open: the one asked for, kept in the state for a resume; or, when
 * the run resumes an unfinished backfill, that backfill's. Undefined: a nightly run. A backfill asked for while
 * another run is unfinished is refused, the state left as it was.
 */
export async function backfillOfRun(
  asked: BackfillWindow | undefined,
  run: { state: StateStore; runId: string; resumed: boolean; log: Logger },
): Promise<BackfillWindow | undefined> {
  const { state, runId, resumed, log } = run;
  const unfinished = state.get<BackfillWindow>(BACKFILL_KEY);
  if (!resumed) {
    if (asked !== undefined) await state.set(BACKFILL_KEY, asked);
    return asked;
  }
  if (asked === undefined) {
    if (unfinished !== undefined)
      log.warn(
        `run ${runId} is an unfinished backfill (${describeWindow(unfinished)}): resuming it; the nightly load runs next time`,
      );
    return unfinished;
  }
  if (unfinished !== undefined && same(unfinished, asked)) return unfinished;
  throw refused(
    `run ${runId} of this pipeline did not finish (${unfinished !== undefined ? `a backfill of ${describeWindow(unfinished)}` : 'a nightly load'}): a backfill is a run of its own and does not start over it`,
    'finish that run first (`sluice run <pipeline>` resumes it, paying nothing twice), then run the backfill; ' +
      'or give it up with --fresh (its paid job is not reused)',
  );
}

function same(a: BackfillWindow, b: BackfillWindow): boolean {
  return a.of === b.of && a.from === b.from && a.to === b.to;
}
