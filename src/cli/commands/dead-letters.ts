/** `sluice dead-letters <pipeline.yaml> [--replay]`: records that failed to decode or transform, and their replay. */
import type { Argv, CommandModule } from 'yargs';
import type { ShardId } from '../../operations/history.js';
import type { StoredDeadLetter } from '../../operations/replay.js';
import type { LoadedPipeline } from '../../pipeline/load.js';
import { parseShard } from '../args.js';
import type { CliContext } from '../context.js';
import { cliLogger, interruptible, printSummary, runOptions } from './run.js';
import { printableLine } from '../../core/printable.js';

interface DeadLetterArgs {
  pipeline: string;
  replay: boolean;
  json: boolean;
  shard?: ShardId;
  'log-format': 'text' | 'json';
  quiet: boolean;
  progress: boolean;
}

const RAW_SHOWN = 160;

export function formatDeadLetter(d: StoredDeadLetter): string {
  const at = d.offset !== undefined ? ` @${d.offset}` : '';
  const raw = d.raw === undefined ? [] : [`    ${d.raw.length > RAW_SHOWN ? d.raw.slice(0, RAW_SHOWN) + '…' : d.raw}`];
  // The unit (a file's name), the reason and the record come from the data: each line stays one line.
  return [`${d.at} ${d.unit} ${d.stage}${at}: ${d.reason}`, ...raw].map(printableLine).join('\n');
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
          .option('json', { type: 'boolean', default: false, describe: 'List as JSON lines' })
          .option('shard', {
            type: 'string',
            coerce: parseShard,
            describe:
              "Only shard i/n's letters (each shard keeps its own); without it, a sharded pipeline's letters of every shard",
          }),
      )
        .example('$0 dead-letters pipelines/company_profiles.yaml', 'What was rejected, where and why')
        .example('$0 dead-letters pipelines/company_profiles.yaml --replay', 'After fixing the pipeline: load them')
        .example('$0 dead-letters pipelines/company_profiles.yaml --shard 2/4', 'The letters of one shard')
        .strict() as unknown as Argv<DeadLetterArgs>,
    handler: async (args) => {
      const { loadPipeline } = await import('../../pipeline/load.js');
      const { loadWithoutService } = await import('../offline.js');
      // Listing reads files only; a replay loads into the sinks with the pipeline as a run has it.
      const pipeline = args.replay
        ? await loadPipeline(args.pipeline, ctx.io.env)
        : await loadWithoutService(args.pipeline, ctx.io.env);
      const { listDeadLetters } = await import('../../operations/replay.js');
      // A sharded run keeps each shard's letters under the shard's state: all of them unless one is asked for.
      const scopes = args.shard ? [args.shard] : await letterScopes(pipeline);
      if (!args.replay) {
        let listed = 0;
        for (const shard of scopes) {
          const letters = await listDeadLetters(pipeline, shard);
          if (args.json) {
            for (const d of letters) ctx.io.out(JSON.stringify(shard ? { shard: shardText(shard), ...d } : d));
            continue;
          }
          // Every scope found is counted only when it holds letters; one that was asked for always is.
          if (letters.length === 0 && (scopes.length > 1 || (shard && !args.shard))) continue;
          listed++;
          const of = shard ? `${pipeline.name}, shard ${shardText(shard)}` : pipeline.name;
          ctx.io.out(`${letters.length} dead letter${letters.length === 1 ? '' : 's'} not yet replayed (${of})`);
          for (const d of letters) ctx.io.out(formatDeadLetter(d));
        }
        if (!args.json && listed === 0) ctx.io.out(`0 dead letters not yet replayed (${pipeline.name})`);
        return;
      }
      const sharded = scopes.length > 1;
      let replayed = 0;
      for (const shard of scopes) if (await replay(ctx, args, pipeline, shard, sharded)) replayed++;
      if (replayed === 0 && sharded) ctx.io.out('no dead letters to replay');
    },
  };
}

function shardText(shard: ShardId): string {
  return `${shard.index}/${shard.count}`;
}

/** Where a pipeline's letters are: its own state, then each shard's that has state (undefined: the unsharded run). */
async function letterScopes(pipeline: LoadedPipeline): Promise<(ShardId | undefined)[]> {
  const { shardsOf } = await import('../../operations/history.js');
  return [undefined, ...(await shardsOf(pipeline))];
}

async function replay(
  ctx: CliContext,
  args: DeadLetterArgs,
  pipeline: LoadedPipeline,
  shard: ShardId | undefined,
  sharded: boolean,
): Promise<boolean> {
  const { listDeadLetters, replayDeadLetters } = await import('../../operations/replay.js');
  // Of a sharded pipeline's scopes, one that left no letters has nothing to replay: its lock and state are not
  // touched (the unsharded one still says so when there are no shards).
  if (!args.shard && (shard || sharded) && (await listDeadLetters(pipeline, shard)).length === 0) return false;
  const { formatSummary } = await import('../../operations/summary.js');
  const of = shard ? ` of shard ${shardText(shard)}` : '';
  const result = await interruptible(
    ctx,
    args['log-format'],
    (signal) =>
      replayDeadLetters(
        pipeline,
        {
          fresh: false,
          logFormat: args['log-format'],
          quiet: args.quiet,
          progress: args.progress,
          command: `sluice dead-letters ${args.pipeline} --replay${shard ? ` --shard ${shardText(shard)}` : ''}`,
          signal,
          ...(shard && { shard }),
        },
        { log: cliLogger(ctx, args) },
      ),
    pipeline,
  );
  if (result.superseded > 0)
    ctx.io.err(
      `warn: ${result.superseded} dead letter${result.superseded === 1 ? '' : 's'}${of} of earlier runs not replayed: ` +
        'a later run replaced their output (`write: replace`)',
    );
  if (result.valuesOnly > 0)
    ctx.io.err(
      `warn: ${result.valuesOnly} dead letter${result.valuesOnly === 1 ? '' : 's'}${of} hold a value that ` +
        "schema_contract's discard_value took out of a stored row, not a row: not replayed",
    );
  // Nothing to replay never becomes an empty run: a `replace` sink would swap in an empty generation.
  if (!result.summary) {
    ctx.io.out(`no dead letters${of} to replay`);
    return true;
  }
  const summary = result.summary;
  printSummary(ctx, summary, args['log-format'], `${formatSummary(summary)}\n  replayed     ${result.replayed}${of}`);
  return true;
}
