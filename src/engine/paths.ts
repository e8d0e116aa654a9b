/** Where a pipeline keeps its run state and dead letters, resolved against the pipeline file's directory. */
import path from 'node:path';
import type { LoadedPipeline } from '../pipeline/load.js';

export interface PipelinePaths {
  stateDir: string;
  stateFile: string;
  deadLetterFile: string;
  /** Downloads of the fast path while they are loaded; deleted after each unit. */
  tmpDir: string;
  /** Held while a run (or a dead-letter replay) uses the state: one at a time (run-lock.ts). */
  lockFile: string;
}

export function pipelinePaths(p: Pick<LoadedPipeline, 'baseDir' | 'name' | 'config'>): PipelinePaths {
  const stateDir = path.resolve(p.baseDir, p.config.state_dir ?? path.join('.sluice', p.name));
  return {
    stateDir,
    stateFile: path.join(stateDir, 'state.json'),
    deadLetterFile: path.resolve(p.baseDir, p.config.dead_letter ?? path.join(stateDir, 'dead-letters.jsonl')),
    tmpDir: path.join(stateDir, 'tmp'),
    lockFile: path.join(stateDir, 'run.lock'),
  };
}
