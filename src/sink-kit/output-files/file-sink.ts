/**
 * What the file sinks (jsonl, parquet) do the same way around their output directory (output-dir.ts): open it for a
 * run, name its lock, list its published files for `sluice show`, read the checkpoints its manifest holds, commit a
 * unit by staging it, and name a publish's files. How each sink writes its lines and its published files stays in
 * the sink.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, rm, stat, truncate } from 'node:fs/promises';
import path from 'node:path';
import type { CommitResult, Logger, SchemaChange, SinkContext, UnitCommit, WorkUnit } from '../../core/types.js';
import { InferredSchema } from '../../schema/infer.js';
import type { SerializedColumns } from './dataset-schema.js';
import type { Manifest, ManifestUnit, ShardRef } from './manifest.js';
import { isErrno } from './fs-durable.js';
import { OutputDir, outputLockPath, outputRoot } from './output-dir.js';
import { isS3Url, type S3Options } from './s3.js';

/** How the registry (or a test) makes a file sink. */
export interface FileSinkOptions {
  /** The pipeline file's directory, which `path` is relative to; describe() shows `path` as written without it. */
  baseDir?: string;
  /** The shard this run is: its files go into the one shared `path` beside the other shards' (output-dir.ts). */
  shard?: ShardRef;
}

/** The part of a file sink's config about where its files go. */
export interface FileSinkTarget {
  path: string;
  s3?: S3Options | undefined;
  write: 'append' | 'replace';
}

/** The sink's output directory for this run (its `replace` generation, its shard's manifest), ready to stage. */
export async function openFileSinkOutput(
  target: FileSinkTarget,
  ctx: SinkContext,
  options: FileSinkOptions,
  format: Manifest['format'],
): Promise<OutputDir> {
  const out = await OutputDir.open({
    root: outputRoot(ctx.baseDir, target.path),
    ...(target.s3 && { s3: target.s3 }),
    mode: target.write,
    fresh: ctx.fresh,
    pipeline: ctx.pipeline,
    format,
    label: `${format} sink`,
    log: ctx.log,
    ...(options.shard && { shard: options.shard }),
  });
  await mkdir(out.stagedDir, { recursive: true });
  return out;
}

/**
 * The output's live data for `sluice compact`: opened as an `append` joins it (the directory, or the generation a
 * `replace` output links to), so nothing new is started; undefined when no run has written the output yet.
 */
export async function openForCompaction(
  target: FileSinkTarget,
  ctx: SinkContext,
  options: FileSinkOptions,
  format: Manifest['format'],
): Promise<OutputDir | undefined> {
  const root = outputRoot(ctx.baseDir, target.path);
  if (!isS3Url(root)) {
    try {
      if (!(await stat(root)).isDirectory()) return undefined;
    } catch (err) {
      if (isErrno(err, 'ENOENT')) return undefined;
      throw err;
    }
  }
  return OutputDir.open({
    root,
    ...(target.s3 && { s3: target.s3 }),
    mode: 'append',
    fresh: false,
    pipeline: ctx.pipeline,
    format,
    label: `${format} sink`,
    log: ctx.log,
    ...(options.shard && { shard: options.shard }),
  });
}

/** Two pipelines writing to one directory would each remove the other's temp files as orphans. */
export function fileSinkLockPath(target: FileSinkTarget, baseDir: string, shard: ShardRef | undefined): string {
  return outputLockPath(outputRoot(baseDir, target.path), target.write, shard);
}

/** A glob of the published files under the output (`pattern` below every directory), local or on S3. */
export function publishedFilesGlob(baseDir: string, configPath: string, pattern: string): string {
  const root = outputRoot(baseDir, configPath);
  return isS3Url(root) ? `${root.replace(/\/*$/, '/')}**/${pattern}` : path.join(root, '**', pattern);
}

/** The checkpoints the manifest's committed units carry, by unit id. */
export function manifestCheckpoints(m: Manifest): Map<string, unknown> {
  const out = new Map<string, unknown>();
  for (const [id, u] of Object.entries(m.units)) if (u.checkpoint !== undefined) out.set(id, u.checkpoint);
  return out;
}

/**
 * The id a publish gives its files (`part-<id>-<n>`): the shard's tag, the time, a random suffix, so that no two
 * publishes of any shard or run name a file alike.
 */
export function newPublishId(out: OutputDir): string {
  return `${out.fileTag}${new Date().toISOString().replace(/[-:.TZ]/g, '')}-${randomBytes(3).toString('hex')}`;
}

export interface StageUnitOptions {
  /** The staged file's name in the staging directory (no glob for data files may list it). */
  name: string;
  /**
   * The staging file is a spool other units of the run already hold bytes of (sinks/jsonl/spools.ts): `write`
   * appends the unit's lines after its first `offset` bytes, the entry records the range, and a unit that is not
   * committed (or holds no records) cuts the file back to `offset` rather than removing it.
   */
  offset?: number;
  /**
   * Writes the unit's lines into `file`, observing its rows into `schema`; checks may throw (nothing commits).
   * `longest`: bytes of its longest line, kept with the staged entry when given.
   */
  write(file: string, schema: InferredSchema): Promise<{ rows: number; bytes: number; longest?: number; raw?: true }>;
  /** What the staged entry keeps of the unit's columns, for the publish that writes its file. */
  stagedColumns(schema: InferredSchema): SerializedColumns;
  /**
   * Under the commit lock, with the unit recorded in `m` (the manifest as this commit leaves it): joins the unit's
   * columns into the dataset's; returns the changes that made.
   */
  joinColumns(m: Manifest, schema: InferredSchema): SchemaChange[];
  /**
   * Once enough is staged after this commit (`stagedEnough`), `publish` makes files of about the target size.
   * Absent: the caller publishes (the JSONL spools, once the unit's spool is free again).
   */
  publishing?: { stagedEnough(): boolean; publish(): Promise<void> };
  /** For messages: `jsonl sink`. */
  label: string;
  log: Logger;
}

/**
 * Commits `unit` by staging it: its lines go to a synced file in the staging directory and the manifest records the
 * unit with that file and `commit`'s checkpoint (asked for once the lines are written) in one swap (exactly once from that moment), unless a commit of the same unit (another
 * attempt, another shard's run) got there first. A unit without records is recorded too (it is not read again) and
 * stages nothing. Once enough is staged the staged units are published; the unit is committed either way, and a
 * publish that fails now is retried by the sink's `finish()`, which reports it.
 */
export async function stageUnit(
  out: OutputDir,
  unit: WorkUnit,
  commit: UnitCommit,
  o: StageUnitOptions,
): Promise<CommitResult> {
  const file = path.join(out.stagedDir, o.name);
  const schema = new InferredSchema({ temporalText: true });
  let committed = false;
  try {
    const { rows, bytes, longest, raw } = await o.write(file, schema);
    const entry: ManifestUnit = { records: rows, files: [], committed_at: new Date().toISOString() };
    if (rows > 0)
      entry.staged = {
        file: `${out.stagedRel}/${o.name}`,
        bytes,
        ...(o.offset !== undefined && { offset: o.offset }),
        schema: o.stagedColumns(schema),
        ...(longest !== undefined && { longest }),
        ...(raw && { raw }),
      };
    const checkpoint = commit.checkpoint();
    if (checkpoint !== undefined) entry.checkpoint = checkpoint;
    let changes: SchemaChange[] = [];
    committed = await out.commit({
      moves: [],
      check: (m) => !Object.hasOwn(m.units, unit.id),
      apply: (m) => {
        m.units[unit.id] = entry;
        if (rows > 0) changes = o.joinColumns(m, schema);
      },
    });
    if (rows === 0) await discardStaged(file, o.offset);
    if (committed && o.publishing?.stagedEnough())
      await o.publishing.publish().catch((err: unknown) => o.log.warn(publishFailed(o.label, err)));
    return { committed, records: committed ? rows : 0, ...(changes.length > 0 && { schemaChanges: changes }) };
  } finally {
    if (!committed) await discardStaged(file, o.offset);
  }
}

/**
 * What a sink says of a publish during the run that failed: its units stay committed and staged, and `finish()`
 * publishes them (and fails the run if it cannot).
 */
export function publishFailed(label: string, err: unknown): string {
  return `${label}: publishing staged units failed, retried at the end: ${String(err)}`;
}

/** A staged unit's bytes that no entry names: its file, or (a spool) what the unit added after `offset`. */
async function discardStaged(file: string, offset: number | undefined): Promise<void> {
  if (offset === undefined) await rm(file, { force: true });
  // Best effort: the spool is cut to its committed length again before anything is added to it or published.
  else await truncate(file, offset).catch(() => undefined);
}
