/** `sluice dead-letters <pipeline.yaml> [--replay]`: records that failed to decode or transform, and their replay. */
import type { Argv, CommandModule } from 'yargs';
import type { StoredDeadLetter } from '../../engine/dead-letter-file.js';
import type { CliContext } from '../context.js';
import { cliLogger, printPartial, printSummary, runOptions } from './run.js';

interface DeadLetterArgs {
  pipeline: string;
  replay: boolean;
  json: boolean;
  'log-format': 'text' | 'json';
  quiet: boolean;
  progress: boolean;
}

const RAW_SHOWN = 160;

export function formatDeadLetter(d: StoredDeadLetter): string {
  const at = d.offset !== undefined ? ` @${d.offset}` : '';
  const raw = d.raw === undefined ? '' : `\n    ${d.raw.length > RAW_SHOWN ? d.raw.slice(0, RAW_SHOWN) + '…' : d.raw}`;
  return `${d.at} ${d.unit} ${d.stage}${at}: ${d.reason}${raw}`;
}

export function deadLettersCommand(ctx: CliContext): CommandModule<object, DeadLetterArgs> {
  return {
    command: 'dead-letters <pipeline>',
    describe: 'List the records a pipeline could not decode or transform; --replay runs them again',
    builder: (y) =>
      runOptions(
        y
          .positional('pipeline', { type: 'string', demandOption: true, describe: 'Pipeline YAML file' })
          .option('replay', {
            type: 'boolean',
            default: false,
            describe:
              'Run the dead letters through the (fixed) pipeline, each committed exactly once: a letter re-enters at ' +
              'the transform that rejected it; to fix a broken record itself, edit its `raw` in the dead-letter file',
          })
          .option('json', { type: 'boolean', default: false, describe: 'List as JSON lines' }),
      )
        .example('$0 dead-letters pipelines/company_profiles.yaml', 'What was rejected, where and why')
        .example('$0 dead-letters pipelines/company_profiles.yaml --replay', 'After fixing the pipeline: load them')
        .strict() as unknown as Argv<DeadLetterArgs>,
    handler: async (args) => {
      const { loadPipeline } = await import('../../pipeline/load.js');
      const pipeline = await loadPipeline(args.pipeline, ctx.io.env);
      const { listDeadLetters, replayDeadLetters } = await import('../../engine/dead-letters.js');
      const letters = await listDeadLetters(pipeline);
      if (!args.replay) {
        if (args.json) for (const d of letters) ctx.io.out(JSON.stringify(d));
        else {
          ctx.io.out(
            `${letters.length} dead letter${letters.length === 1 ? '' : 's'} not yet replayed (${pipeline.name})`,
          );
          for (const d of letters) ctx.io.out(formatDeadLetter(d));
        }
        return;
      }
      const { formatSummary } = await import('../../engine/run.js');
      const interrupts = ctx.io.interrupts();
      let result: Awaited<ReturnType<typeof replayDeadLetters>>;
      try {
        result = await replayDeadLetters(
          pipeline,
          {
            fresh: false,
            logFormat: args['log-format'],
            quiet: args.quiet,
            progress: args.progress,
            command: `sluice dead-letters ${args.pipeline} --replay`,
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
      if (result.superseded > 0)
        ctx.io.err(
          `warn: ${result.superseded} dead letter${result.superseded === 1 ? '' : 's'} of earlier runs not replayed: ` +
            'a later run replaced their output (`write: replace`)',
        );
      // Nothing to replay never becomes an empty run: a `replace` sink would swap in an empty generation.
      if (!result.summary) {
        ctx.io.out('no dead letters to replay');
        return;
      }
      const summary = result.summary;
      printSummary(ctx, summary, args['log-format'], `${formatSummary(summary)}\n  replayed     ${result.replayed}`);
    },
  };
}
