/**
 * `sluice report <pipeline.yaml> [--out report.html]`: the run history as one self-contained HTML page — a chart of
 * every figure runs.jsonl records per attempt, failures, backfills and changes made by hand (`sluice state`) marked —
 * with the cursor the next run starts from (as `sluice state` tells it) and the outputs' sizes. Opens offline in any
 * browser; needs no service.
 */
import type { Argv, CommandModule } from 'yargs';
import { parseShard, positiveInt } from '../args.js';
import type { CliContext } from '../context.js';

interface ReportArgs {
  pipeline: string;
  out: string;
  limit: number;
  shard?: { index: number; count: number };
  outputs: boolean;
}

export function reportCommand(ctx: CliContext): CommandModule<object, ReportArgs> {
  return {
    command: 'report <pipeline>',
    describe: 'Write an HTML page charting the pipeline’s runs: records, duration, paid jobs, dead letters, failures',
    builder: (y) =>
      y
        .positional('pipeline', { type: 'string', demandOption: true, describe: 'Pipeline YAML file' })
        .option('out', { type: 'string', default: 'report.html', describe: 'The HTML file to write' })
        .option('limit', {
          type: 'number',
          default: 90,
          coerce: positiveInt('limit'),
          describe: 'Attempts charted at most (the newest)',
        })
        .option('shard', { type: 'string', coerce: parseShard, describe: 'The runs of shard i/n' })
        .option('outputs', {
          type: 'boolean',
          default: true,
          describe: 'Read the cursor and the outputs’ sizes (--no-outputs: the history only)',
        })
        .example('$0 report pipelines/company_profiles.yaml', 'report.html: how the nights went')
        .example('$0 report pipelines/serp.yaml --out /var/www/serp.html --limit 30', 'The last 30 attempts')
        .strict() as unknown as Argv<ReportArgs>,
    handler: async (args) => {
      const { loadWithoutService } = await import('../offline.js');
      // As `sluice runs`: the history needs no service, so an unset key or address must not stop the report.
      const pipeline = await loadWithoutService(args.pipeline, ctx.io.env);
      const { readHistory } = await import('../../operations/history.js');
      const { stateChangeMarks, toPoint } = await import('../report/series.js');
      const { renderReport } = await import('../report/page.js');
      const { attempts, changes } = await readHistory(pipeline, args.shard);
      const points = attempts.slice(-args.limit).map((a) => toPoint(a as unknown as Record<string, unknown>));
      let extras = {};
      if (args.outputs) {
        const { readCursor, readOutputs } = await import('../report/gather.js');
        extras = { cursor: await readCursor(pipeline), outputs: await readOutputs(pipeline) };
      }
      const html = renderReport({
        pipeline: pipeline.name,
        file: pipeline.file,
        generatedAt: new Date(),
        points,
        total: attempts.length,
        changes: stateChangeMarks(changes),
        outputs: [],
        ...extras,
      });
      const { writeReportFile } = await import('../report/write.js');
      await writeReportFile(args.out, html);
      ctx.io.out(`wrote ${args.out}: ${points.length} attempt(s) of ${pipeline.name}`);
    },
  };
}
