/** `sluice run <pipeline.yaml>`: the whole pipeline, resumable; the summary (and `--show` rows) on stdout. */
import type { Argv, CommandModule } from 'yargs';
import type { Logger } from '../../core/types.js';
import type { RunSummary } from '../../operations/api.js';
import { createLogger } from '../../runtime/logger.js';
import { DEFAULT_LOCK_WAIT, lockWait, parseShard, positiveInt } from '../args.js';
import type { CliContext } from '../context.js';
import { EXIT_CODES, SluiceError } from '../../core/errors.js';
import { interruptGraceMs } from '../../core/limits.js';
import type { LoadedPipeline } from '../../pipeline/load.js';

export interface RunArgs {
  pipeline: string;
  fresh: boolean;
  'allow-duplicates': boolean;
  'reset-cursor': boolean;
  /** `--from <v> [--to <v>]`: a backfill of that window of the source's cursor. */
  from?: string;
  to?: string;
  /** `--shard i/n`, or `auto`: from the orchestrator's environment (resolveShard). */
  shard?: { index: number; count: number } | 'auto';
  'shard-count'?: number;
  'log-format': 'text' | 'json';
  quiet: boolean;
  progress: boolean;
  show?: number;
  /** `--wait[=duration]`: ms to wait for another run's lock. */
  wait?: number;
}

/** Options shared by everything that runs a pipeline (`run`, `dead-letters --replay`). */
export function runOptions<T>(y: Argv<T>) {
  return y
    .option('log-format', {
      choices: ['text', 'json'] as const,
      default: 'text' as const,
      describe: 'Log lines on stderr as text or as JSON objects (one per line)',
    })
    .option('quiet', { type: 'boolean', default: false, describe: 'Only warnings and errors on stderr' })
    .option('progress', {
      type: 'boolean',
      default: true,
      describe: 'Progress bars on a terminal, a line every 10 s otherwise (--no-progress: none)',
    });
}

/** The run's log lines go to the command's stderr (the real one, or a test's), never around it. */
export function cliLogger(ctx: CliContext, args: { 'log-format': 'text' | 'json'; quiet: boolean }): Logger {
  return createLogger({
    format: args['log-format'],
    level: args.quiet ? 'warn' : 'info',
    write: (line) => ctx.io.err(line),
  });
}

export function printSummary(ctx: CliContext, summary: RunSummary, format: 'text' | 'json', text: string): void {
  ctx.io.out(format === 'json' ? JSON.stringify({ status: 'ok', ...summary }) : text);
}

/** Machine readers of a JSON log get the partial counts of a failed run too; people get the one-line error. */
/**
 * A run the user may interrupt (SIGINT/SIGTERM stop it; units in flight get the pipeline's grace to commit): what it
 * committed before a failure or an interrupt is printed as a partial summary (JSON logs), and the error goes on.
 */
export async function interruptible<T>(
  ctx: CliContext,
  format: 'text' | 'json',
  run: (signal: AbortSignal) => Promise<T>,
  pipeline: LoadedPipeline,
): Promise<T> {
  // The process ends within the pipeline's grace after the first signal, whatever the run is doing (io.ts).
  const interrupts = ctx.io.interrupts({ exitAfterMs: interruptGraceMs(pipeline.config.limits) });
  try {
    return await run(interrupts.signal);
  } catch (err) {
    printPartial(ctx, err, format);
    throw err;
  } finally {
    interrupts.release();
  }
}

export function printPartial(ctx: CliContext, err: unknown, format: 'text' | 'json'): void {
  const partial = (err as { summary?: RunSummary }).summary;
  if (!partial || format !== 'json') return;
  const status = err instanceof Error && err.name === 'InterruptedError' ? 'interrupted' : 'failed';
  ctx.io.out(JSON.stringify({ status, ...partial, error: (err as Error).message }));
}

export function runCommand(ctx: CliContext): CommandModule<object, RunArgs> {
  return {
    command: 'run <pipeline>',
    describe: 'Run a pipeline: resumes an unfinished run, skips committed units',
    builder: (y) =>
      runOptions(
        y
          .positional('pipeline', { type: 'string', demandOption: true, describe: 'Pipeline YAML file' })
          .option('fresh', {
            type: 'boolean',
            default: false,
            describe: 'Start over: forget checkpoints and committed units (a paid job already started is not reused)',
          })
          .option('allow-duplicates', {
            type: 'boolean',
            default: false,
            describe:
              'With --fresh or --from: load every unit again even into `write: append` outputs that hold what earlier runs committed (their records then appear twice)',
          })
          .option('reset-cursor', {
            type: 'boolean',
            default: false,
            describe: 'Incremental sources start from their initial cursor: load everything again (--fresh implies it)',
          })
          .option('from', {
            type: 'string',
            describe:
              "Backfill: load the records whose cursor is after this value again (an incremental snapshot's `cursor`; a review crawl's review dates; a SERP crawl: refetch the queries fetched before this date), as a run of its own; the nightly cursor stays where it is",
          })
          .option('to', {
            type: 'string',
            describe: 'With --from: only up to this cursor value (included); default: up to now',
          })
          .option('wait', {
            type: 'string',
            coerce: lockWait,
            describe: `If another run holds the pipeline's lock, wait for it (--wait: up to ${DEFAULT_LOCK_WAIT}; --wait=10m, --wait=90s) instead of exiting with code 3`,
          })
          .option('shard', {
            type: 'string',
            coerce: (v: string) => (v === 'auto' ? 'auto' : parseShard(v)),
            describe:
              'Run only shard i of n (0-based), e.g. 0/4: every unit falls in exactly one shard. `auto`: i from JOB_COMPLETION_INDEX (Kubernetes Indexed Jobs) or SLUICE_SHARD_INDEX, n from --shard-count or SLUICE_SHARD_COUNT',
          })
          .option('shard-count', {
            type: 'number',
            coerce: positiveInt('shard-count'),
            describe: 'With --shard auto: how many shards there are (default: SLUICE_SHARD_COUNT)',
          }),
      )
        .option('show', {
          type: 'number',
          coerce: positiveInt('show'),
          describe: 'Afterwards, print the first N rows of every output',
        })
        .example('$0 run pipelines/company_profiles.yaml', 'Run it (resuming a failed run)')
        .example('$0 run pipelines/serp.yaml --fresh --show 5', 'Start over, then show 5 rows of each output')
        .example('$0 run pipelines/serp.yaml --shard 0/4 --log-format json', 'A quarter of the units, JSON logs')
        .example(
          '$0 run p.yaml --shard auto --shard-count 4',
          'In a Kubernetes Indexed Job pod (after `sluice prepare`)',
        )
        .example('$0 run nightly.yaml --wait=30m', 'From cron: wait up to 30 min for a run still going')
        .example('$0 run nightly.yaml --reset-cursor', 'Load everything again, not only what is new')
        .example(
          '$0 run nightly.yaml --from 2025-03-01 --to 2025-03-08',
          'Reload one week (a backfill), pay for it alone',
        )
        .strict() as unknown as Argv<RunArgs>,
    handler: async (args) => {
      const shard = resolveShard(args.shard, args['shard-count'], ctx.io.env);
      const backfill = backfillArgs(args, shard !== undefined);
      const { loadPipeline } = await import('../../pipeline/load.js');
      const pipeline = await loadPipeline(args.pipeline, ctx.io.env);
      const { runPipeline } = await import('../../operations/run.js');
      const { formatSummary } = await import('../../operations/summary.js');
      const summary = await interruptible(
        ctx,
        args['log-format'],
        (signal) =>
          runPipeline(
            pipeline,
            {
              fresh: args.fresh,
              ...(args['allow-duplicates'] && { allowDuplicates: true }),
              resetCursor: args['reset-cursor'],
              ...(backfill && { backfill }),
              ...(shard !== undefined && { shard }),
              logFormat: args['log-format'],
              quiet: args.quiet,
              progress: args.progress,
              ...(args.wait !== undefined && { waitForLockMs: args.wait }),
              command: `sluice run ${args.pipeline}${shard ? ` --shard ${shard.index}/${shard.count}` : ''}${backfillCommand(backfill)}`,
              signal,
            },
            { log: cliLogger(ctx, args) },
          ),
        pipeline,
      );
      printSummary(ctx, summary, args['log-format'], formatSummary(summary));
      if (args.show !== undefined) {
        const { showOutputs } = await import('../show.js');
        await showOutputs(ctx.io, pipeline, args.show);
      }
    },
  };
}

/** `--from`/`--to` as the engine takes them; what cannot go with them refused before the pipeline loads (exit 2). */
function backfillArgs(args: RunArgs, sharded: boolean): { from: string; to?: string } | undefined {
  if (args.from === undefined) {
    if (args.to !== undefined)
      throw new SluiceError('--to needs --from: a backfill window starts after a cursor value', {
        hint: 'add --from <value> (the window is the values after it, up to --to), or drop --to',
        exitCode: EXIT_CODES.config,
      });
    return undefined;
  }
  const clash = args['reset-cursor'] ? '--reset-cursor' : sharded ? '--shard' : undefined;
  if (clash !== undefined)
    throw new SluiceError(`--from does not go with ${clash}`, {
      hint:
        clash === '--shard'
          ? 'run the backfill unsharded: it starts its own filter job for the window'
          : 'a backfill loads a window and keeps the cursor; --reset-cursor loads everything again: choose one',
      exitCode: EXIT_CODES.config,
    });
  return { from: args.from, ...(args.to !== undefined && { to: args.to }) };
}

function backfillCommand(b: { from: string; to?: string } | undefined): string {
  return b === undefined ? '' : ` --from ${b.from}${b.to !== undefined ? ` --to ${b.to}` : ''}`;
}

/** Where `--shard auto` finds the index: Kubernetes Indexed Jobs set the first, anything else may set the second. */
const INDEX_VARS = ['JOB_COMPLETION_INDEX', 'SLUICE_SHARD_INDEX'] as const;

/**
 * `--shard i/n` as given, or `--shard auto` resolved from the orchestrator's environment. A missing or impossible
 * index or count is a config error (exit 2): retrying the pod will not fix its spec.
 */
export function resolveShard(
  shard: RunArgs['shard'],
  shardCount: number | undefined,
  env: Readonly<Record<string, string | undefined>>,
): { index: number; count: number } | undefined {
  if (shard !== 'auto') {
    if (shard !== undefined && shardCount !== undefined && shardCount !== shard.count)
      throw shardError(
        `--shard ${shard.index}/${shard.count} and --shard-count ${shardCount} disagree`,
        'drop --shard-count (it is for --shard auto)',
      );
    return shard;
  }
  const named = INDEX_VARS.find((v) => env[v] !== undefined && env[v] !== '');
  if (named === undefined)
    throw shardError(
      '--shard auto: no shard index in the environment (JOB_COMPLETION_INDEX or SLUICE_SHARD_INDEX)',
      'run it in a Kubernetes Job with `completionMode: Indexed`, set SLUICE_SHARD_INDEX (0-based), or pass --shard i/n',
    );
  const index = wholeNumber(env[named]!);
  if (index === undefined)
    throw shardError(
      `--shard auto: ${named} is "${env[named]}", not a whole number ≥ 0`,
      `set ${named} to the shard's 0-based index`,
    );
  const countText = shardCount !== undefined ? String(shardCount) : env.SLUICE_SHARD_COUNT;
  if (countText === undefined || countText === '')
    throw shardError(
      '--shard auto: the number of shards is not given',
      "pass --shard-count N (the Job's `completions`), or set SLUICE_SHARD_COUNT",
    );
  const count = wholeNumber(countText);
  if (count === undefined || count < 1)
    throw shardError(
      `--shard auto: the shard count is "${countText}", not a whole number ≥ 1`,
      'pass --shard-count N with N ≥ 1',
    );
  if (index >= count)
    throw shardError(
      `--shard auto: ${named}=${index} is out of range for ${count} shard(s) (0 to ${count - 1})`,
      "make --shard-count / SLUICE_SHARD_COUNT equal to the number of indexes (the Job's `completions`)",
    );
  return { index, count };
}

function wholeNumber(text: string): number | undefined {
  return /^\s*\d+\s*$/.test(text) ? Number(text) : undefined;
}

function shardError(message: string, hint: string): SluiceError {
  return new SluiceError(message, { hint, exitCode: EXIT_CODES.config });
}
