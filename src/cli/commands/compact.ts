/**
 * `sluice compact <pipeline.yaml>`: the small files of the pipeline's file sinks (parquet, jsonl) rewritten into
 * files of about `target_file_mb`, under the same commit protocol as a run's (operations/compact.ts). A run in progress
 * makes it exit 3, as it makes a second run.
 */
import type { Argv, CommandModule } from 'yargs';
import type { CliContext } from '../context.js';

interface CompactArgs {
  pipeline: string;
  json: boolean;
}

export function compactCommand(ctx: CliContext): CommandModule<object, CompactArgs> {
  return {
    command: 'compact <pipeline>',
    describe: 'Rewrite the small files of the pipeline’s Parquet and JSONL outputs into files of the target size',
    builder: (y) =>
      y
        .positional('pipeline', { type: 'string', demandOption: true, describe: 'Pipeline YAML file' })
        .option('json', { type: 'boolean', default: false, describe: 'What each sink did, as one JSON object' })
        .example('$0 compact pipelines/nightly.yaml', 'A month of nightly files per partition → a few large ones')
        .strict() as unknown as Argv<CompactArgs>,
    handler: async (args) => {
      const { loadWithoutService } = await import('../offline.js');
      const { compactPipeline } = await import('../../operations/compact.js');
      const { createLogger } = await import('../../runtime/logger.js');
      // Compaction calls no service: an unset key or address must not stop it (as `sluice runs` reads them).
      const pipeline = await loadWithoutService(args.pipeline, ctx.io.env);
      const log = createLogger({ format: 'text', level: 'warn', write: (line) => ctx.io.err(line) });
      const results = await compactPipeline(pipeline, { log, command: `sluice compact ${pipeline.file}` });
      if (args.json) {
        ctx.io.out(JSON.stringify({ pipeline: pipeline.name, sinks: results }));
        return;
      }
      for (const r of results)
        ctx.io.out(
          r.replaced === 0
            ? `${r.sink}: ${r.filesBefore} file(s), nothing to compact`
            : `${r.sink}: ${r.replaced} small file(s) rewritten as ${r.written}: ${r.filesBefore} → ${r.filesAfter} file(s)`,
        );
    },
  };
}
