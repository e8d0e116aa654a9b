/**
 * What the file sinks (jsonl, parquet) do the same way around their output directory (output-dir.ts): open it for a
 * run, name its lock, list its published files for `sluice show`, read the checkpoints its manifest holds, and name
 * a publish's files. How each sink stages a unit and writes its files stays in the sink.
 */
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import type { SinkContext } from '../../src/core/types.js';
import type { Manifest, ShardRef } from './manifest.js';
import { OutputDir, outputLockPath, outputRoot, type FileSinkHooks } from './output-dir.js';
import { isS3Url, type S3Options } from './s3.js';

/** How the registry (or a test) makes a file sink. */
export interface FileSinkOptions {
  /** The pipeline file's directory, which `path` is relative to; describe() shows `path` as written without it. */
  baseDir?: string;
  hooks?: FileSinkHooks;
  /** The shard this run is: its files go into the one shared `path` beside the other shards' (output-dir.ts). */
  shard?: ShardRef;
}

/** The part of a file sink's config about where its files go. */
export interface FileSinkTarget {
  path: string;
  s3?: S3Options | undefined;
  write: 'append' | 'replace';
}

/** The sink's output directory for this run (its `replace` generation, its shard's manifest). */
export function openFileSinkOutput(
  target: FileSinkTarget,
  ctx: SinkContext,
  options: FileSinkOptions,
  format: Manifest['format'],
): Promise<OutputDir> {
  return OutputDir.open({
    root: outputRoot(ctx.baseDir, target.path),
    ...(target.s3 && { s3: target.s3 }),
    mode: target.write,
    fresh: ctx.fresh,
    pipeline: ctx.pipeline,
    format,
    label: `${format} sink`,
    log: ctx.log,
    hooks: options.hooks ?? {},
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
