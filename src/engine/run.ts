import type { LoadedPipeline } from '../pipeline/load.js';
import type { PlanReport, RunOptions, RunSummary } from './api.js';

export async function runPipeline(_p: LoadedPipeline, _opts: RunOptions): Promise<RunSummary> {
  throw new Error('engine not written yet');
}

export async function planPipeline(_p: LoadedPipeline): Promise<PlanReport> {
  throw new Error('engine not written yet');
}
