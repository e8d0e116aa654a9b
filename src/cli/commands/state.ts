/**
 * `sluice state <pipeline.yaml>`: where the next run of an incremental pipeline starts — the cursor every sink
 * committed, and each sink's own newest — then, with `--units`, the committed units, sorted.
 * `sluice state set|reset|drop <pipeline.yaml>` change it by hand (operations/state.ts), each recorded in the
 * run history. All of them read the sinks under the pipeline's locks: a run in progress makes them exit 3. None
 * calls the service: no API key is needed.
 */
import type { Argv, CommandModule } from 'yargs';
import type { CursorState, StateTarget } from '../../operations/state.js';
export type { CursorState } from '../../operations/state.js';
import type { StateChange } from '../../operations/history.js';
import { positiveInt } from '../args.js';
import type { CliContext } from '../context.js';
import { printableLine } from '../../core/printable.js';

interface StateArgs {
  pipeline: string;
  json: boolean;
  units: boolean;
  limit: number;
  cursor?: string;
  sink?: string;
  yes: boolean;
}

export function stateCommand(ctx: CliContext): CommandModule<object, StateArgs> {
  const pipelineArg = (y: Argv): Argv =>
    y.positional('pipeline', { type: 'string', demandOption: true, describe: 'Pipeline YAML file' });
  const sub = (
    command: string,
    describe: string,
    builder: (y: Argv) => Argv,
    handler: (args: StateArgs) => Promise<void>,
  ): CommandModule<object, StateArgs> => ({
    command,
    describe,
    builder: (y) => builder(pipelineArg(y)).strict() as unknown as Argv<StateArgs>,
    handler,
  });
  const commands = [
    sub(
      '$0 <pipeline>',
      'Show where the next run starts (the cursor per source and per sink); --units lists the committed units',
      (y) =>
        y
          .option('json', { type: 'boolean', default: false, describe: 'The whole state as one JSON object' })
          .option('units', { type: 'boolean', default: false, describe: 'List the committed units, sorted' })
          .option('limit', {
            type: 'number',
            default: 50,
            coerce: positiveInt('limit'),
            describe: 'Units listed at most with --units',
          })
          .example('$0 state pipelines/nightly.yaml', 'Where tonight’s run starts')
          .example('$0 state pipelines/nightly_files.yaml --units', 'Which files the next run will not load again'),
      async (args) => {
        const { readState } = await import('../../operations/state.js');
        const state = await readState(await target(ctx, args.pipeline, 'state'));
        ctx.io.out(args.json ? JSON.stringify(state) : formatState(state, args.units ? args.limit : 0));
      },
    ),
    sub(
      'set <pipeline>',
      'Set the cursor the next run starts from (incremental sources whose cursor is one value)',
      (y) =>
        y
          .option('cursor', {
            type: 'string',
            demandOption: true,
            describe: 'The value: the next run loads what is after it',
          })
          .example('$0 state set pipelines/nightly.yaml --cursor 2026-10-01T00:00:00Z', 'Load again from October'),
      async (args) => {
        const { setCursor } = await import('../../operations/state.js');
        report(await setCursor(await target(ctx, args.pipeline, 'state set'), args.cursor!));
      },
    ),
    sub(
      'reset <pipeline>',
      'Forget the committed checkpoints (of every sink, or one): the next run starts from the initial cursor',
      (y) =>
        y
          .option('sink', { type: 'string', describe: 'Only this sink: its number, type or part of its description' })
          .option('yes', { type: 'boolean', default: false, describe: 'Confirm' })
          .example('$0 state reset pipelines/nightly.yaml --yes', 'Load everything again on the next run'),
      async (args) => {
        const { resetCursor } = await import('../../operations/state.js');
        const t = await target(ctx, args.pipeline, 'state reset');
        report(await resetCursor(t, args.sink, (would) => confirm(args, would)));
      },
    ),
    sub(
      'drop <pipeline>',
      'Remove a sink’s table or files together with its checkpoints (after confirmation)',
      (y) =>
        y
          .option('sink', {
            type: 'string',
            demandOption: true,
            describe: 'The sink: its number, type or part of its description',
          })
          .option('yes', { type: 'boolean', default: false, describe: 'Confirm' })
          .example('$0 state drop pipelines/nightly.yaml --sink duckdb --yes', 'Drop the table and load it again'),
      async (args) => {
        const { dropSink } = await import('../../operations/state.js');
        const t = await target(ctx, args.pipeline, 'state drop');
        report(await dropSink(t, args.sink!, (would) => confirm(args, would)));
      },
    ),
  ];

  /**
   * Without --yes: asked at a terminal; elsewhere (cron, CI, a pipe) it says what it would do and stops with exit 2.
   */
  async function confirm(args: StateArgs, would: string): Promise<void> {
    if (args.yes) return;
    if (ctx.io.confirm && (await ctx.io.confirm(`sluice ${would.replace(/^would /, 'will ')}. Go on?`))) return;
    const { UsageError } = await import('../report.js');
    throw new UsageError(`${would}: not done without --yes`, 'add --yes to confirm');
  }

  function report(c: { record: StateChange; notes: string[] }): void {
    ctx.io.out(printableLine(`${c.record.kind}: ${c.record.what}`));
    for (const n of c.notes) ctx.io.err(`note: ${n}`);
  }

  return {
    command: 'state',
    describe: 'Show or change an incremental pipeline’s cursor state: where the next run starts',
    builder: (y) => {
      for (const c of commands) y.command(c as CommandModule);
      return y as unknown as Argv<StateArgs>;
    },
    handler: () => undefined,
  };
}

/**
 * The pipeline, loaded without a service: reading or changing state calls nothing, so an unset variable (the key,
 * the address) must not stop it — tried as set first, then with unset ones standing for the embedded emulator, as
 * `sluice runs` does.
 */
async function target(ctx: CliContext, file: string, command: string): Promise<StateTarget> {
  const { loadWithoutService } = await import('../offline.js');
  const { createLogger } = await import('../../runtime/logger.js');
  const pipeline = await loadWithoutService(file, ctx.io.env);
  const log = createLogger({ format: 'text', level: 'warn', write: (line) => ctx.io.err(line) });
  return { pipeline, log, command: `sluice ${command} ${pipeline.file}` };
}

/** A checkpoint on one line, cut to what a terminal shows. */
function oneLine(c: unknown, max = 110): string {
  const text = JSON.stringify(c) ?? 'undefined';
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** The cursor first (per source, then per sink); the units (`units` at most, sorted) only when asked for. */
export function formatState(s: CursorState, units: number): string {
  if (!s.incremental)
    return `${s.pipeline}: the ${s.source} source keeps no cursor (not incremental): every run loads everything`;
  const value = (v: string | number | undefined): string =>
    v === undefined ? `the initial value ${JSON.stringify(s.initial)}` : JSON.stringify(v);
  const lines = [`${s.pipeline}: ${s.source} source`];
  if (s.field !== undefined) {
    lines.push(`next run starts after: ${s.field} > ${value(s.cursor)}  (committed by every sink)`);
  } else
    lines.push(
      `next run skips: ${s.effective.length} unit(s) committed by every sink` +
        (s.effective.length === 0 ? ' — it starts from the initial cursor' : ''),
    );
  if (s.changes > 0) lines.push(`(${s.changes} cursor change(s) made by hand count: \`sluice runs\` lists them)`);
  lines.push('sinks:');
  const everywhere = new Set(s.effective.map((c) => `${c.run}/${c.unit}`));
  for (const sink of s.sinks) {
    const ahead = sink.checkpoints.filter((c) => !everywhere.has(`${c.run}/${c.unit}`));
    lines.push(
      `  ${sink.index}: ${sink.sink}: ` +
        (s.field !== undefined ? `${s.field} ${value(sink.cursor)}, ` : '') +
        `${sink.checkpoints.length} unit(s)` +
        (ahead.length > 0 ? `, ${ahead.length} ahead of the other sinks (not counted in the cursor)` : ''),
    );
  }
  if (units > 0) {
    lines.push(`units committed by every sink (${s.effective.length}), by run then unit:`);
    const sorted = sortUnits(s.effective);
    for (const c of sorted.slice(0, units)) lines.push(`  ${c.run || '-'}  ${c.unit}`, `    ${oneLine(c.checkpoint)}`);
    if (sorted.length > units) lines.push(`  (${sorted.length - units} more: --limit or --json lists them)`);
    for (const sink of s.sinks) {
      const ahead = sink.checkpoints.filter((c) => !everywhere.has(`${c.run}/${c.unit}`));
      for (const c of sortUnits(ahead).slice(0, units))
        lines.push(`  sink ${sink.index} only: ${c.run || '-'}  ${c.unit}`);
    }
  } else if (s.effective.length > 0) lines.push(`(--units lists the ${s.effective.length} committed unit(s))`);
  // Units and checkpoints name files and values from the data: each stays one line.
  return lines.map(printableLine).join('\n');
}

function sortUnits<T extends { run: string; unit: string }>(units: readonly T[]): T[] {
  return [...units].sort((a, b) =>
    a.run !== b.run ? (a.run < b.run ? -1 : 1) : a.unit.localeCompare(b.unit, 'en', { numeric: true }),
  );
}
