/** `sluice runs <pipeline.yaml>`: the pipeline's past runs (its run history), newest first. */
import type { Argv, CommandModule } from 'yargs';
import { parseShard, positiveInt } from '../args.js';
import type { CliContext } from '../context.js';

interface RunsArgs {
  pipeline: string;
  json: boolean;
  limit: number;
  shard?: { index: number; count: number };
}

export function runsCommand(ctx: CliContext): CommandModule<object, RunsArgs> {
  return {
    command: 'runs <pipeline>',
    describe: 'List past runs of a pipeline, newest first: status and cause, units, records, dead letters, paid jobs',
    builder: (y) =>
      y
        .positional('pipeline', { type: 'string', demandOption: true, describe: 'Pipeline YAML file' })
        .option('json', { type: 'boolean', default: false, describe: 'One JSON object per run and line' })
        .option('limit', { type: 'number', default: 20, coerce: positiveInt('limit'), describe: 'Runs listed at most' })
        .option('shard', {
          type: 'string',
          coerce: parseShard,
          describe: 'The runs of shard i/n (each shard keeps its own history)',
        })
        .example('$0 runs pipelines/company_profiles.yaml', 'How last night went')
        .example('$0 runs pipelines/serp.yaml --json --limit 1', 'The last run, for a script')
        .example('$0 runs pipelines/company_profiles.yaml --shard 2/4', 'The attempts of one shard')
        .strict() as unknown as Argv<RunsArgs>,
    handler: async (args) => {
      const { loadWithoutService } = await import('../offline.js');
      // Reading the history needs no service: an unset variable (the key, the address) must not stop it. Tried as
      // set first, so a `${VAR:-default}` in state_dir resolves as the run resolved it; then with the unset ones
      // standing for the embedded emulator, which every service setting accepts.
      const pipeline = await loadWithoutService(args.pipeline, ctx.io.env);
      const { readHistory } = await import('../../operations/history.js');
      const { entryTime } = await import('../runs-table.js');
      const { attempts, changes } = await readHistory(pipeline, args.shard);
      // Attempts and changes made by hand (`sluice state set/reset/drop`), newest first.
      const runs = [...attempts, ...changes].sort((a, b) =>
        entryTime(a) < entryTime(b) ? 1 : entryTime(a) > entryTime(b) ? -1 : 0,
      );
      const shown = runs.slice(0, args.limit);
      if (args.json) {
        for (const r of shown) ctx.io.out(JSON.stringify(r));
        return;
      }
      // A prepared job's shards keep their histories apart: first, whether all of them have committed.
      const { isPrepared } = await import('../../operations/history.js');
      const { formatCompletion, shardCompletion } = await import('../../operations/finalize.js');
      if (await isPrepared(pipeline))
        ctx.io.out(
          await shardCompletion(pipeline).then(
            (c) => formatCompletion(c) + (args.shard ? '' : "\n(a shard's attempts: --shard i/n)"),
            (err: unknown) => `shards: ${(err as Error).message}`,
          ),
        );
      if (runs.length === 0) {
        ctx.io.out(`no runs of ${pipeline.name} yet`);
        return;
      }
      const { formatRuns } = await import('../runs-table.js');
      ctx.io.out(formatRuns(shown));
      if (runs.length > shown.length) ctx.io.out(`(${runs.length - shown.length} older runs: --limit ${runs.length})`);
    },
  };
}
