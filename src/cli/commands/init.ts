/**
 * `sluice init <source> [--sink <sink>]`: writes a commented pipeline that runs at once against the embedded
 * emulator, and an `.env.example` naming the variables it reads. Never overwrites a file unless told (`--force`).
 */
import type { Argv, CommandModule } from 'yargs';
import type { CliContext } from '../context.js';

interface InitArgs {
  source: string;
  sink: string;
  name?: string;
  dir: string;
  force: boolean;
}

export function initCommand(ctx: CliContext): CommandModule<object, InitArgs> {
  return {
    command: 'init <source>',
    describe: 'Write a commented pipeline for a source and a sink that runs at once against the emulator',
    builder: (y) =>
      y
        .positional('source', { type: 'string', demandOption: true, describe: 'Source kind, e.g. snapshot, reviews' })
        .option('sink', { type: 'string', default: 'duckdb', describe: 'Sink kind: duckdb, parquet, jsonl, postgres' })
        .option('name', { type: 'string', describe: 'Pipeline name and file name (default <source>_<sink>)' })
        .option('dir', { type: 'string', default: '.', describe: 'Directory to write into (created if missing)' })
        .option('force', { type: 'boolean', default: false, describe: 'Overwrite files that exist' })
        .example('$0 init reviews --sink postgres', 'reviews_postgres.yaml and .env.example in this directory')
        .example('$0 init snapshot --sink parquet --dir pipelines', 'A snapshot into Parquet files, in pipelines/')
        .strict() as unknown as Argv<InitArgs>,
    handler: async (args) => {
      const { mkdir, writeFile } = await import('node:fs/promises');
      const { existsSync } = await import('node:fs');
      const path = (await import('node:path')).default;
      const { didYouMean } = await import('../../core/suggest.js');
      const { PIPELINE_NAME } = await import('../../pipeline/schema.js');
      const { registeredTypes } = await import('../../pipeline/registry.js');
      const { scaffold } = await import('../init/scaffold.js');
      const { UsageError } = await import('../report.js');

      for (const [kind, given] of [
        ['source', args.source],
        ['sink', args.sink],
      ] as const) {
        const kinds = registeredTypes(kind);
        if (!kinds.includes(given)) {
          const guess = didYouMean(given, kinds);
          throw new UsageError(
            `unknown ${kind} kind "${given}"${guess ? ` (did you mean "${guess}"?)` : ''}`,
            `the ${kind} kinds are ${kinds.join(', ')}`,
          );
        }
      }
      const name = args.name ?? `${args.source}_${args.sink}`;
      if (!PIPELINE_NAME.test(name))
        throw new UsageError(
          `--name "${name}" cannot name a pipeline`,
          'use letters, digits, `_` and `-` (at most 64), starting with a letter or digit',
        );

      const files = scaffold({ source: args.source, sink: args.sink, name });
      const targets = files.map((f) => ({ ...f, target: path.join(args.dir, f.path) }));
      const existing = targets.filter((f) => existsSync(f.target)).map((f) => f.target);
      if (existing.length > 0 && !args.force)
        throw new UsageError(
          `not overwriting ${existing.join(', ')}: ${existing.length === 1 ? 'it exists' : 'they exist'}`,
          `pass --force to overwrite, or ${existing.every((f) => f.endsWith('.yaml')) ? '--name <another name>' : '--dir <another directory>'}`,
        );
      for (const f of targets) {
        await mkdir(path.dirname(f.target), { recursive: true });
        // `wx` unless forced: a file that appeared since the check above is not overwritten either.
        await writeFile(f.target, f.text, { flag: args.force ? 'w' : 'wx' });
        ctx.io.out(`wrote ${f.target}`);
      }
      const pipelineFile = targets[0]!.target;
      ctx.io.out(`\nrun it:  sluice run ${pipelineFile} --show 5`);
    },
  };
}
