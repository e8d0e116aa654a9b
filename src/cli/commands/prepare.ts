/**
 * `sluice prepare <pipeline.yaml>`: start the pipeline's paid job once, for shards to share; `sluice finalize
 * <pipeline.yaml>`: whether every shard of it has committed (non-zero, naming the missing ones, until then); once
 * they all have, it writes `_sluice_shards.json` (the shards' manifests) next to each file output.
 */
import type { Argv, CommandModule } from 'yargs';
import { EXIT_CODES, SluiceError } from '../../core/errors.js';
import { DEFAULT_LOCK_WAIT, lockWait, positiveInt } from '../args.js';
import type { CliContext } from '../context.js';
import { cliLogger, runOptions } from './run.js';

interface PrepareArgs {
  pipeline: string;
  shards?: number;
  fresh: boolean;
  wait?: number;
  json: boolean;
  'log-format': 'text' | 'json';
  quiet: boolean;
  progress: boolean;
}

export function prepareCommand(ctx: CliContext): CommandModule<object, PrepareArgs> {
  return {
    command: 'prepare <pipeline>',
    describe:
      'Start the paid job (filter job, deep lookup) once and record it for the shards (`run --shard`), which then split it',
    builder: (y) =>
      runOptions(
        y
          .positional('pipeline', { type: 'string', demandOption: true, describe: 'Pipeline YAML file' })
          .option('shards', {
            type: 'number',
            coerce: positiveInt('shards'),
            describe: 'How many shards will run (for `sluice finalize`; default: as many as ran)',
          })
          .option('fresh', {
            type: 'boolean',
            default: false,
            describe: 'Start a new paid job even if the last prepare was cut off (its job is not reused)',
          })
          .option('wait', {
            type: 'string',
            coerce: lockWait,
            describe: `If a run of the pipeline holds its lock, wait for it (--wait: up to ${DEFAULT_LOCK_WAIT})`,
          })
          .option('json', { type: 'boolean', default: false, describe: 'The prepared record as JSON on stdout' }),
      )
        .example('$0 prepare pipelines/company_profiles.yaml --shards 4', 'Start the filter job once, for 4 shards')
        .example('$0 run pipelines/company_profiles.yaml --shard auto --shard-count 4', 'Then, in each shard')
        .strict() as unknown as Argv<PrepareArgs>,
    handler: async (args) => {
      const { loadPipeline } = await import('../../pipeline/load.js');
      const pipeline = await loadPipeline(args.pipeline, ctx.io.env);
      const { preparePipeline } = await import('../../operations/prepare.js');
      const interrupts = ctx.io.interrupts();
      try {
        const { prepared, resumed, written } = await preparePipeline(
          pipeline,
          {
            fresh: args.fresh,
            ...(args.shards !== undefined && { shards: args.shards }),
            ...(args.wait !== undefined && { waitForLockMs: args.wait }),
            command: `sluice prepare ${args.pipeline}`,
            signal: interrupts.signal,
          },
          { log: cliLogger(ctx, args) },
        );
        if (args.json) {
          ctx.io.out(JSON.stringify({ status: 'ok', ...prepared, resumed, written }));
          return;
        }
        const jobs = prepared.paidJobs.map((j) => `${j.kind} ${j.id}`);
        const n = args.shards ?? 'N';
        ctx.io.out(
          [
            `prepared ${prepared.pipeline} (${prepared.id}): ${
              jobs.length > 0
                ? `${resumed ? 'reused ' : ''}${jobs.join(', ')}`
                : 'no paid job to start (the shards split the planned units)'
            }; ${prepared.units} unit(s)`,
            ...written.map((w) => `  recorded in ${w}`),
            `next: sluice run ${args.pipeline} --shard i/${n} for i in 0..${typeof n === 'number' ? n - 1 : 'N-1'} (or --shard auto), then sluice finalize ${args.pipeline}`,
          ].join('\n'),
        );
      } finally {
        interrupts.release();
      }
    },
  };
}

interface FinalizeArgs {
  pipeline: string;
  'shard-count'?: number;
  json: boolean;
  'log-format': 'text' | 'json';
}

export function finalizeCommand(ctx: CliContext): CommandModule<object, FinalizeArgs> {
  return {
    command: 'finalize <pipeline>',
    describe: 'Check that every shard of the prepared job has committed: exits 1 naming the shards still missing',
    builder: (y) =>
      y
        .positional('pipeline', { type: 'string', demandOption: true, describe: 'Pipeline YAML file' })
        .option('shard-count', {
          type: 'number',
          coerce: positiveInt('shard-count'),
          describe: 'How many shards there are (default: `prepare --shards`, else as many as ran)',
        })
        .option('json', { type: 'boolean', default: false, describe: 'The completion as JSON' })
        .option('log-format', {
          choices: ['text', 'json'] as const,
          default: 'text' as const,
          describe: 'An error on stderr as text or as a JSON object',
        })
        .example('$0 finalize pipelines/company_profiles.yaml', 'After the shards: are all of them committed?')
        .example('$0 finalize p.yaml --shard-count 4 --json', 'For a script, with the count named')
        .strict() as unknown as Argv<FinalizeArgs>,
    handler: async (args) => {
      const { loadWithoutService } = await import('../offline.js');
      // Reading the shards' states needs no service: an unset key or address must not stop it (as in `runs`).
      const pipeline = await loadWithoutService(args.pipeline, ctx.io.env);
      const { formatCompletion, shardCompletion, writeShardsRecord } = await import('../../operations/finalize.js');
      const c = await shardCompletion(pipeline, args['shard-count']);
      // Complete: the file outputs get the list of the shards' manifests (readers that follow manifests).
      const records = await writeShardsRecord(pipeline, c);
      ctx.io.out(
        args.json
          ? JSON.stringify({
              prepared: c.prepared.id,
              shards: c.count,
              complete: c.missing.length === 0,
              missing: c.missing.map((s) => s.index),
              status: c.shards.map((s) => ({ shard: s.shard.index, committed: s.committed, ...s.last })),
              records,
            })
          : [formatCompletion(c), ...records.map((r) => `wrote ${r}`)].join('\n'),
      );
      if (c.missing.length > 0)
        throw new SluiceError(
          `${c.missing.length} of ${c.count} shard(s) of ${c.prepared.id} have not committed: ${c.missing.map((s) => `${s.index}/${s.count}`).join(', ')}`,
          {
            hint: `run each missing shard again (it resumes): ${c.missing
              .slice(0, 3)
              .map((s) => `sluice run ${args.pipeline} --shard ${s.index}/${s.count}`)
              .join('; ')}${c.missing.length > 3 ? '; …' : ''}`,
            exitCode: EXIT_CODES.failure,
          },
        );
    },
  };
}
