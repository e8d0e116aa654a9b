/**
 * A pipeline's history as the commands read it (`sluice runs`, `sluice report`, the dead-letter replay's scopes):
 * the attempts runs.jsonl records and the changes made by hand beside them, per shard. Reading takes no lock:
 * runs.jsonl is appended a whole line at a time, and a line cut short by a crash is skipped.
 */
import type { LoadedPipeline } from '../pipeline/load.js';
import { pipelinePaths, shardsWithState, type ShardId } from '../state/paths.js';
import { readRunHistory, runHistoryFile, type RunRecord } from '../state/run-history.js';
import { readStateChanges, type StateChange } from '../state/state-changes.js';
import { findPrepared } from './prepare.js';

export type { RunRecord, ShardId, StateChange };

export interface History {
  /** Every attempt, oldest first; one whose process is gone from this host without an outcome is `crashed`. */
  attempts: RunRecord[];
  /** `sluice state set/reset/drop`, oldest first. */
  changes: StateChange[];
}

/** The history of the pipeline, or of one shard of it (each shard keeps its own). */
export async function readHistory(pipeline: LoadedPipeline, shard?: ShardId): Promise<History> {
  const file = runHistoryFile(pipelinePaths(pipeline, shard).stateDir);
  const [attempts, changes] = await Promise.all([readRunHistory(file), readStateChanges(file)]);
  return { attempts, changes };
}

/** The shards that have state of their own (ran with `--shard i/n`), besides the unsharded run's. */
export function shardsOf(pipeline: LoadedPipeline): Promise<ShardId[]> {
  return shardsWithState(pipelinePaths(pipeline).rootStateDir);
}

/** Whether the pipeline's job was prepared for shards (`sluice prepare`): its shards' completion is part of its story. */
export async function isPrepared(pipeline: LoadedPipeline): Promise<boolean> {
  return (await findPrepared(pipeline, pipelinePaths(pipeline))) !== undefined;
}
