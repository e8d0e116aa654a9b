/**
 * `sluice dead-letters`: list a pipeline's dead letters, and replay them through the (fixed) pipeline.
 *
 * Replay is exactly-once: the dead letters of one original unit form one replay unit whose id is derived from the
 * letters' keys, committed by the sinks like any unit; letters are marked replayed only after the run completes,
 * and a crashed replay resumes with the same run id, so its committed units are skipped.
 */
import { createHash } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Batch, Source, SourceContext, WorkUnit } from '../core/types.js';
import type { LoadedPipeline } from '../pipeline/load.js';
import type { RunOptions, RunSummary } from './api.js';
import { deadLetterKey, readDeadLetters, type StoredDeadLetter } from './dead-letter-file.js';
import { pipelinePaths, runPipeline } from './run.js';

function replayedFile(p: LoadedPipeline): string {
  return path.join(pipelinePaths(p).stateDir, 'dead-letters.replayed.json');
}

async function replayedKeys(p: LoadedPipeline): Promise<Set<string>> {
  try {
    return new Set(JSON.parse(await readFile(replayedFile(p), 'utf8')) as string[]);
  } catch {
    return new Set();
  }
}

/** Dead letters not yet replayed successfully. */
export async function listDeadLetters(p: LoadedPipeline): Promise<StoredDeadLetter[]> {
  const done = await replayedKeys(p);
  return (await readDeadLetters(pipelinePaths(p).deadLetterFile)).filter((d) => !done.has(deadLetterKey(d)));
}

/** The letters' raw text as records again; ones that still do not parse become dead letters of the replay. */
function replaySource(letters: StoredDeadLetter[]): Source {
  const byUnit = new Map<string, StoredDeadLetter[]>();
  for (const d of letters) byUnit.set(d.unit, [...(byUnit.get(d.unit) ?? []), d]);
  const units: WorkUnit[] = [...byUnit.entries()].map(([unit, ds]) => ({
    id: `replay:${createHash('sha256').update(ds.map(deadLetterKey).join('\n')).digest('hex').slice(0, 20)}`,
    params: { original_unit: unit, letters: ds },
  }));
  return {
    plan: async () => units,
    async *read(unit: WorkUnit, ctx: SourceContext): AsyncIterable<Batch> {
      const rows: Batch = [];
      for (const d of unit.params.letters as StoredDeadLetter[]) {
        try {
          const v = JSON.parse(d.raw ?? '') as unknown;
          if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new Error('not a JSON object');
          rows.push(v as Record<string, unknown>);
        } catch (err) {
          ctx.deadLetter({
            unit: d.unit,
            ...(d.offset !== undefined && { offset: d.offset }),
            stage: `replay:${d.stage}`,
            reason: `still invalid on replay: ${(err as Error).message}`,
            ...(d.raw !== undefined && { raw: d.raw }),
          });
        }
      }
      if (rows.length) yield rows;
    },
  };
}

export async function replayDeadLetters(
  p: LoadedPipeline,
  opts: RunOptions,
): Promise<RunSummary & { replayed: number }> {
  const letters = await listDeadLetters(p);
  const replayState = path.join(pipelinePaths(p).stateDir, 'replay');
  const replayPipeline: LoadedPipeline = {
    ...p,
    config: {
      ...p.config,
      state_dir: replayState,
      // New rejections are written beside the originals, so they are listed (and replayable) too.
      dead_letter: pipelinePaths(p).deadLetterFile,
    },
  };
  const summary = await runPipeline(replayPipeline, opts, { source: replaySource(letters) });
  const done = await replayedKeys(p);
  for (const d of letters) done.add(deadLetterKey(d));
  await writeFile(replayedFile(p), JSON.stringify([...done]));
  return { ...summary, replayed: letters.length };
}
