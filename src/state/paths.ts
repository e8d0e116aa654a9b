/** Where a pipeline keeps its run state and dead letters, resolved against the pipeline file's directory. */
import { readdir } from 'node:fs/promises';
import path from 'node:path';

export interface PipelinePaths {
  stateDir: string;
  stateFile: string;
  deadLetterFile: string;
  /** Downloads of the fast path while they are loaded; deleted after each unit. */
  tmpDir: string;
  /** Held while a run (or a dead-letter replay) uses the state: one at a time (run-lock.ts). */
  lockFile: string;
  /**
   * The pipeline's own state directory, shared by its shards: `sluice prepare` records the paid job there
   * (`prepared.json`), and the embedded emulator's state lives there. Equal to `stateDir` for an unsharded run.
   */
  rootStateDir: string;
}

export interface ShardId {
  index: number;
  count: number;
}

/** `shard-2-of-4`: a shard's own directory name (state, temp files, lock; file sinks' share of the output). */
export function shardDirName(shard: ShardId): string {
  return `shard-${shard.index}-of-${shard.count}`;
}

/** The shards that have a state directory under the pipeline's (`shard-i-of-n/`), in index order. */
export async function shardsWithState(rootStateDir: string): Promise<ShardId[]> {
  let names: string[];
  try {
    names = await readdir(rootStateDir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  return names
    .map((name) => /^shard-(\d+)-of-(\d+)$/.exec(name))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ index: Number(m[1]), count: Number(m[2]) }))
    .sort((a, b) => a.count - b.count || a.index - b.index);
}

/**
 * A sharded run keeps its state, temp downloads, lock and dead letters in a directory of its own under the
 * pipeline's: shards started together on one machine would otherwise delete each other's downloads and resume each
 * other's runs.
 */
/** What the paths are made of: the pipeline file's directory, its name, and the two options that move them. */
export interface PathsOf {
  baseDir: string;
  name: string;
  config: { state_dir?: string | undefined; dead_letter?: string | undefined };
}

export function pipelinePaths(p: PathsOf, shard?: ShardId): PipelinePaths {
  const rootStateDir = path.resolve(p.baseDir, p.config.state_dir ?? path.join('.sluice', p.name));
  const stateDir = shard ? path.join(rootStateDir, shardDirName(shard)) : rootStateDir;
  const deadLetters = p.config.dead_letter;
  return {
    stateDir,
    stateFile: path.join(stateDir, 'state.json'),
    deadLetterFile:
      deadLetters === undefined
        ? path.join(stateDir, 'dead-letters.jsonl')
        : shardedFile(path.resolve(p.baseDir, deadLetters), shard),
    tmpDir: path.join(stateDir, 'tmp'),
    lockFile: path.join(stateDir, 'run.lock'),
    rootStateDir,
  };
}

/** `dl.jsonl` → `dl.shard-1-of-4.jsonl`: a configured file, one per shard (appends of two processes would interleave). */
function shardedFile(file: string, shard?: ShardId): string {
  if (!shard) return file;
  const ext = path.extname(file);
  return `${file.slice(0, file.length - ext.length)}.${shardDirName(shard)}${ext}`;
}
