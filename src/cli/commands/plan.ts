/** `sluice plan <pipeline.yaml>`: what a run would do — units, requests, targets — without starting paid work. */
import type { Argv, CommandModule } from 'yargs';
import type { PlanReport, SinkColumns } from '../../operations/api.js';
import { positiveInt } from '../args.js';
import type { CliContext } from '../context.js';
import { printableLine } from '../../core/printable.js';

interface PlanArgs {
  pipeline: string;
  json: boolean;
  units: number;
}

export function formatPlan(plan: PlanReport, shown: number): string {
  const lines = [`plan: ${plan.pipeline} (source ${plan.source})`];
  const estimate =
    plan.estimatedRecords !== undefined ? `, about ${plan.estimatedRecords.toLocaleString('en-US')} records` : '';
  lines.push(`units: ${plan.units.length}${estimate}`);
  for (const u of plan.units.slice(0, shown))
    lines.push(`  ${u.id}${u.estimatedRecords !== undefined ? `  (~${u.estimatedRecords} records)` : ''}`);
  if (plan.units.length > shown) lines.push(`  … and ${plan.units.length - shown} more`);
  lines.push(`requests: ${plan.requests.length ? '' : 'none besides reading the units'}`);
  for (const r of plan.requests) lines.push(`  ${r}`);
  lines.push('targets:');
  for (const t of plan.targets) lines.push(`  ${t}`);
  if (plan.columns)
    lines.push('columns:', ...plan.columns.flatMap((c) => formatColumns(c, false).map((l) => `  ${l}`)));
  if (plan.notes.length) lines.push('notes:', ...plan.notes.map((n) => `  ${n}`));
  // Unit ids name files and service ids: each stays one line.
  return lines.map(printableLine).join('\n');
}

/**
 * One sink's columns: a header line, then a line per column (`name  TYPE  NOT NULL`, aligned), with the
 * description when `long` (`sluice schema`).
 */
export function formatColumns(sink: SinkColumns, long: boolean): string[] {
  if (!sink.declared) return [`${sink.target}: columns inferred from the data (the transforms declare none)`];
  const nameWidth = Math.max(...sink.columns.map((c) => c.name.length));
  // Nested types are long (`STRUCT(…)[]`): they push their line's tail rather than every line's.
  const typeWidth = Math.min(16, Math.max(...sink.columns.map((c) => c.type.length)));
  const lines = [`${sink.target}: ${sink.columns.length} declared columns`];
  for (const c of sink.columns) {
    const line = `  ${c.name.padEnd(nameWidth)}  ${c.type.padEnd(typeWidth)}  ${c.nullable ? '        ' : 'NOT NULL'}`;
    lines.push((long ? `${line}  ${c.description}` : line).trimEnd());
  }
  return lines;
}

export function planCommand(ctx: CliContext): CommandModule<object, PlanArgs> {
  return {
    command: 'plan <pipeline>',
    describe:
      'Check the key, zone, dataset or job against the service, then show the units, requests and targets of a run; starts no paid job',
    builder: (y) =>
      y
        .positional('pipeline', { type: 'string', demandOption: true, describe: 'Pipeline YAML file' })
        .option('units', { type: 'number', default: 10, coerce: positiveInt('units'), describe: 'Unit ids to list' })
        .option('json', { type: 'boolean', default: false, describe: 'The whole plan as JSON' })
        .example('$0 plan pipelines/company_profiles.yaml', 'What tonight’s run would do')
        .example('$0 plan pipelines/serp.yaml --json', 'Every unit id, as JSON')
        .strict() as unknown as Argv<PlanArgs>,
    handler: async (args) => {
      const { loadPipeline } = await import('../../pipeline/load.js');
      const pipeline = await loadPipeline(args.pipeline, ctx.io.env);
      const { planPipeline } = await import('../../operations/plan.js');
      const plan = await planPipeline(pipeline);
      ctx.io.out(args.json ? JSON.stringify(plan, null, 2) : formatPlan(plan, args.units));
    },
  };
}
