/**
 * `sluice finalize`: whether every shard of the prepared job has committed (each shard's own state and history,
 * read as they are: no lock, no sink opened), and once they all have, `_sluice_shards.json` next to each file
 * output, naming the shards' manifests, for readers that follow manifests.
 */
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { errorText } from '../core/error-text.js';
import { EXIT_CODES, SluiceError } from '../core/errors.js';
import { readJsonFile } from '../core/json-file.js';
import type { LoadedPipeline } from '../pipeline/load.js';
import { pipelinePaths, shardDirName, type ShardId } from '../state/paths.js';
import { readRunHistory, runHistoryFile, type RunStatus } from '../state/run-history.js';
import { findPrepared, sharedOutputs, type PreparedJob } from './prepare.js';

export interface ShardStatus {
  shard: ShardId;
  /** Every unit of the shard is committed under the prepared run. */
  committed: boolean;
  /** The shard's last attempt under the prepared run, if any. */
  last?: { status: RunStatus; cause?: string; endedAt?: string };
}

export interface Completion {
  prepared: PreparedJob;
  count: number;
  shards: ShardStatus[];
  missing: ShardId[];
}

/**
 * Whether every shard of the prepared job has committed. The count is `count`, else the prepare's `--shards`, else
 * the largest count any shard of this job ran with.
 */
export async function shardCompletion(p: LoadedPipeline, count?: number): Promise<Completion> {
  const paths = pipelinePaths(p);
  const prepared = await findPrepared(p, paths);
  if (!prepared)
    throw new SluiceError(`${p.name} has no prepared job: nothing to finalize`, {
      hint: `run \`sluice prepare ${path.relative(process.cwd(), p.file)}\` first, then the shards`,
      exitCode: EXIT_CODES.config,
    });
  const n = count ?? prepared.shards ?? (await countOfShardsThatRan(paths.rootStateDir, prepared.id));
  if (n === undefined)
    throw new SluiceError(`no shard of the job prepared ${prepared.preparedAt} (${prepared.id}) has run yet`, {
      hint: 'start the shards (`sluice run <pipeline> --shard i/n`), or pass --shard-count N to name how many there are',
    });
  const shards: ShardStatus[] = [];
  for (let index = 0; index < n; index++) {
    const shard = { index, count: n };
    const sp = pipelinePaths(p, shard);
    const state = await readJson(sp.stateFile);
    const mine = state?.['run:id'] === prepared.id;
    const history = (await readRunHistory(runHistoryFile(sp.stateDir))).filter((r) => r.run === prepared.id);
    const last = history.at(-1);
    shards.push({
      shard,
      committed: mine && state?.['run:complete'] === true,
      ...(last && {
        last: {
          // A `running` attempt whose process is gone reads as `crashed` (run-history.ts).
          status: last.status,
          ...(last.cause !== undefined && { cause: last.cause }),
          ...(last.endedAt !== undefined && { endedAt: last.endedAt }),
        },
      }),
    });
  }
  return { prepared, count: n, shards, missing: shards.filter((s) => !s.committed).map((s) => s.shard) };
}

/** What `_sluice_shards.json` holds: the manifests of a complete sharded load, for readers that follow manifests. */
export interface ShardsRecord {
  version: 1;
  pipeline: string;
  /** The prepared job the shards loaded. */
  prepared: string;
  shards: number;
  /** Every shard's manifest, relative to the output's path: a reader takes the union of their units' files. */
  manifests: string[];
  completed_at: string;
}

/**
 * Once every shard has committed: `_sluice_shards.json` next to each file output (local or `s3://`), naming the
 * shards' manifests. Written only by `sluice finalize` of a complete set, so its presence for the newest prepared
 * job tells a reader the output is whole. Returns where it was written.
 */
export async function writeShardsRecord(p: LoadedPipeline, c: Completion): Promise<string[]> {
  if (c.missing.length > 0) return [];
  const record: ShardsRecord = {
    version: 1,
    pipeline: p.name,
    prepared: c.prepared.id,
    shards: c.count,
    manifests: [],
    completed_at: new Date().toISOString(),
  };
  const written: string[] = [];
  const outputs = sharedOutputs(p);
  // What the record will name is checked in every output before any record is written.
  for (const output of outputs) await output.checkShards?.(c.shards.map((s) => s.shard));
  for (const output of outputs) {
    const store = output.shardsRecord;
    const manifests = c.shards.map((s) => output.manifestName(s.shard));
    await store.write(`${JSON.stringify({ ...record, manifests }, null, 1)}\n`).catch((err: unknown) => {
      throw new SluiceError(`cannot write ${store.location}: ${errorText(err)}`, {
        hint: 'give the user running sluice write access to the output, then run `sluice finalize` again',
        cause: err,
      });
    });
    written.push(store.location);
  }
  return written;
}

async function countOfShardsThatRan(root: string, preparedId: string): Promise<number | undefined> {
  let names: string[];
  try {
    names = await readdir(root);
  } catch {
    return undefined;
  }
  let n: number | undefined;
  for (const name of names) {
    const m = /^shard-(\d+)-of-(\d+)$/.exec(name);
    if (!m) continue;
    const state = await readJson(path.join(root, name, 'state.json'));
    if (state?.['run:id'] === preparedId) n = Math.max(n ?? 0, Number(m[2]));
  }
  return n;
}

/** A shard's state file, absent or half-written read as none. */
function readJson(file: string): Promise<Record<string, unknown> | undefined> {
  return readJsonFile<Record<string, unknown>>(file, {
    absentIsNone: true,
    unreadable: (e) => e,
    invalid: () => undefined,
  });
}

/** One line per shard, for `sluice finalize` and `sluice runs`. */
export function formatCompletion(c: Completion): string {
  const done = c.shards.filter((s) => s.committed).length;
  const lines = [
    `prepared ${c.prepared.preparedAt} (${c.prepared.id}): ${done}/${c.count} shard(s) committed${
      c.missing.length === 0 ? ' — complete' : ''
    }`,
  ];
  for (const s of c.shards) {
    const what = s.committed
      ? 'committed'
      : s.last
        ? `${s.last.status}${s.last.cause ? `: ${s.last.cause}` : ''}`
        : 'not started';
    lines.push(`  shard ${shardDirName(s.shard).replace(/^shard-(\d+)-of-(\d+)$/, '$1/$2')}  ${what}`);
  }
  return lines.join('\n');
}
