/**
 * `sluice state <pipeline.yaml>`: an incremental pipeline's cursor state as its sinks committed it — per sink, and
 * the effective cursor (what every sink committed, which the next run starts from). Reads the sinks under the
 * pipeline's locks, so it never sees a run's commit half-way; a run in progress makes it exit 3 like a second run.
 */
import type { Argv, CommandModule } from 'yargs';
import type { Sink } from '../../core/types.js';
import type { CommittedCheckpoint } from '../../engine/cursor.js';
import type { LoadedPipeline } from '../../pipeline/load.js';
import { positiveInt } from '../args.js';
import type { CliContext } from '../context.js';
import { printableLine } from '../../core/printable.js';

interface StateArgs {
  pipeline: string;
  json: boolean;
  limit: number;
}

export interface SinkCursor {
  sink: string;
  checkpoints: CommittedCheckpoint[];
}

export interface CursorState {
  pipeline: string;
  source: string;
  incremental: boolean;
  /** What every sink committed: the cursor the next run starts from (newest last). */
  effective: CommittedCheckpoint[];
  sinks: SinkCursor[];
}

export function stateCommand(ctx: CliContext): CommandModule<object, StateArgs> {
  return {
    command: 'state <pipeline>',
    describe: 'Show an incremental pipeline’s cursor state: what each sink committed, and where the next run starts',
    builder: (y) =>
      y
        .positional('pipeline', { type: 'string', demandOption: true, describe: 'Pipeline YAML file' })
        .option('json', { type: 'boolean', default: false, describe: 'The whole state as one JSON object' })
        .option('limit', {
          type: 'number',
          default: 20,
          coerce: positiveInt('limit'),
          describe: 'Units listed at most (newest first)',
        })
        .example('$0 state pipelines/nightly_files.yaml', 'Which files the next run will not load again')
        .example('$0 state pipelines/nightly.yaml --json', 'Every committed checkpoint, for a script')
        .strict() as unknown as Argv<StateArgs>,
    handler: async (args) => {
      const { loadPipeline } = await import('../../pipeline/load.js');
      const pipeline = await loadPipeline(args.pipeline, ctx.io.env);
      const state = await readCursorState(pipeline, ctx);
      ctx.io.out(args.json ? JSON.stringify(state) : formatState(state, args.limit));
    },
  };
}

async function readCursorState(pipeline: LoadedPipeline, ctx: CliContext): Promise<CursorState> {
  const { SluiceError } = await import('../../core/errors.js');
  const { buildComponents } = await import('../../engine/components.js');
  const { committedList, isIncremental } = await import('../../engine/cursor.js');
  const { createLogger } = await import('../../engine/logger.js');
  const { pipelinePaths } = await import('../../engine/paths.js');
  const { readSinkCheckpoints } = await import('../../engine/read-checkpoints.js');

  const log = createLogger({ format: 'text', level: 'warn', write: (line) => ctx.io.err(line) });
  const noService = (): never => {
    throw new SluiceError('sluice state does not call the service', { hint: 'this is a bug: please report it' });
  };
  const built = buildComponents(pipeline.config, { log, baseDir: pipeline.baseDir, client: noService });
  const describeSink = (s: Sink): string => s.describe();
  const base = { pipeline: pipeline.name, source: built.sourceType, incremental: isIncremental(built.source) };
  if (!base.incremental) return { ...base, effective: [], sinks: [] };

  const sinks = built.sinks.map((s) => s.sink);
  const perSink = await readSinkCheckpoints(sinks, {
    lockFile: pipelinePaths(pipeline).lockFile,
    baseDir: pipeline.baseDir,
    pipeline: pipeline.name,
    command: `sluice state ${pipeline.file}`,
    log,
  });
  return {
    ...base,
    effective: committedList(perSink),
    sinks: sinks.map((s, i) => ({ sink: describeSink(s), checkpoints: committedList([perSink[i]!], false) })),
  };
}

/** A checkpoint on one line, cut to what a terminal shows. */
function oneLine(c: unknown, max = 110): string {
  const text = JSON.stringify(c) ?? 'undefined';
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

export function formatState(s: CursorState, limit: number): string {
  if (!s.incremental)
    return `${s.pipeline}: the ${s.source} source keeps no cursor (not incremental): every run loads everything`;
  const lines = [`${s.pipeline}: cursor state of the ${s.source} source`];
  const newestFirst = [...s.effective].reverse();
  lines.push(
    `effective (committed by every sink; the next run starts here): ${s.effective.length} unit(s)` +
      (s.effective.length === 0 ? ' — the next run starts from the initial cursor' : ''),
  );
  for (const c of newestFirst.slice(0, limit))
    lines.push(`  ${c.unit}  run ${c.run || '-'}`, `    ${oneLine(c.checkpoint)}`);
  if (newestFirst.length > limit) lines.push(`  (${newestFirst.length - limit} older: --limit or --json lists them)`);
  lines.push('per sink:');
  const everywhere = new Set(s.effective.map((c) => `${c.run}/${c.unit}`));
  for (const sink of s.sinks) {
    const ahead = sink.checkpoints.filter((c) => !everywhere.has(`${c.run}/${c.unit}`));
    lines.push(
      `  ${sink.sink}: ${sink.checkpoints.length} unit(s)` +
        (ahead.length > 0 ? `, ${ahead.length} ahead of the other sinks (not counted in the cursor)` : ''),
    );
    for (const c of [...ahead].reverse().slice(0, limit)) lines.push(`    ahead: ${c.unit}  run ${c.run || '-'}`);
  }
  // Units and checkpoints name files and values from the data: each stays one line.
  return lines.map(printableLine).join('\n');
}
