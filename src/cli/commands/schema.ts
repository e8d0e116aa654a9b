/**
 * `sluice schema <pipeline.yaml>`: the columns each sink's table will have, in the sink's type names. Where the
 * transforms declare none, the columns come from the data: then the output's current columns are shown when it
 * exists, read back the way `--show` reads it (a DESCRIBE of the sink's output query; nothing is opened for writing).
 */
import type { Argv, CommandModule } from 'yargs';
import { printableLine } from '../../core/printable.js';
import type { SinkColumns } from '../../operations/api.js';
import type { CliContext } from '../context.js';
import { formatColumns } from './plan.js';

interface SchemaArgs {
  pipeline: string;
  json: boolean;
}

interface SchemaReport extends SinkColumns {
  /** Undeclared sinks whose output exists: its columns now, in DuckDB's type names. */
  current?: { name: string; type: string }[];
}

function formatReport(r: SchemaReport): string {
  const lines = formatColumns(r, true);
  if (r.current) {
    const width = Math.max(...r.current.map((c) => c.name.length));
    lines.push(
      `  its output has ${r.current.length} columns now:`,
      ...r.current.map((c) => `    ${c.name.padEnd(width)}  ${c.type}`),
    );
  } else if (!r.declared) lines.push('  nothing written yet');
  // Column names come from the data: each stays one line.
  return lines.map(printableLine).join('\n');
}

export function schemaCommand(ctx: CliContext): CommandModule<object, SchemaArgs> {
  return {
    command: 'schema <pipeline>',
    describe:
      "Show the columns each sink's table will have — name, the sink's type, nullability, description — as the transforms declare them",
    builder: (y) =>
      y
        .positional('pipeline', { type: 'string', demandOption: true, describe: 'Pipeline YAML file' })
        .option('json', { type: 'boolean', default: false, describe: 'The columns as JSON' })
        .example('$0 schema pipelines/serp.yaml', 'The columns of every sink of the pipeline')
        .strict() as unknown as Argv<SchemaArgs>,
    handler: async (args) => {
      // Declared columns need no service: an unset key or address must not stop it.
      const { loadWithoutService } = await import('../offline.js');
      const pipeline = await loadWithoutService(args.pipeline, ctx.io.env);
      const { sinkColumns } = await import('../../operations/plan.js');
      const { withOutputs, writtenColumns } = await import('../../operations/outputs.js');
      const log = { debug() {}, info() {}, warn() {}, error() {} };
      const reports = await withOutputs(pipeline, { log, command: `sluice schema ${args.pipeline}` }, async (sinks) => {
        const out: SchemaReport[] = sinkColumns(pipeline, sinks);
        for (const [i, r] of out.entries()) {
          if (r.declared) continue;
          const current = await writtenColumns(sinks[i]!);
          if (current) r.current = current;
        }
        return out;
      });
      ctx.io.out(args.json ? JSON.stringify(reports, null, 2) : reports.map(formatReport).join('\n\n'));
    },
  };
}
