/** `sluice run <pipeline.yaml>`: the whole pipeline, resumable; the summary (and `--show` rows) on stdout. */
import type { Argv, CommandModule } from 'yargs';
import type { Logger } from '../../core/types.js';
import type { RunSummary } from '../../engine/api.js';
import { createLogger } from '../../engine/logger.js';
import { DEFAULT_LOCK_WAIT, lockWait, parseShard, positiveInt } from '../args.js';
import type { CliContext } from '../context.js';

export interface RunArgs {
  pipeline: string;
  fresh: boolean;
  shard?: { index: number; count: number };
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
          .option('wait', {
            type: 'string',
            coerce: lockWait,
            describe: `If another run holds the pipeline's lock, wait for it (--wait: up to ${DEFAULT_LOCK_WAIT}; --wait=10m, --wait=90s) instead of exiting with code 3`,
          })
          .option('shard', {
            type: 'string',
            coerce: parseShard,
            describe: 'Run only shard i of n (0-based), e.g. 0/4: every unit falls in exactly one shard',
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
        .example('$0 run nightly.yaml --wait=30m', 'From cron: wait up to 30 min for a run still going')
        .strict() as unknown as Argv<RunArgs>,
    handler: async (args) => {
      const { loadPipeline } = await import('../../pipeline/load.js');
      const pipeline = await loadPipeline(args.pipeline, ctx.io.env);
      const { formatSummary, runPipeline } = await import('../../engine/run.js');
      let summary: RunSummary;
      const interrupts = ctx.io.interrupts();
      try {
        summary = await runPipeline(
          pipeline,
          {
            fresh: args.fresh,
            ...(args.shard !== undefined && { shard: args.shard }),
            logFormat: args['log-format'],
            quiet: args.quiet,
            progress: args.progress,
            ...(args.wait !== undefined && { waitForLockMs: args.wait }),
            command: `sluice run ${args.pipeline}`,
            signal: interrupts.signal,
          },
          { log: cliLogger(ctx, args) },
        );
      } catch (err) {
        printPartial(ctx, err, args['log-format']);
        throw err;
      } finally {
        interrupts.release();
      }
      printSummary(ctx, summary, args['log-format'], formatSummary(summary));
      if (args.show !== undefined) {
        const { showOutputs } = await import('../show.js');
        await showOutputs(ctx.io, pipeline, args.show);
      }
    },
  };
}
