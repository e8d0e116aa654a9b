/**
 * A publish of the parquet sink: every staged unit → target-size Parquet files, written by DuckDB from the staged
 * NDJSON with the dataset's columns, and moved into place with the units' manifest entries in one manifest swap
 * (the protocol of output-files/output-dir.ts); earlier files whose columns widen into text or JSON are rewritten in
 * the same swap. Apart from the sink (sink.ts) because it is the sink's one long job, called under its lock.
 */
import { mkdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import { SluiceError } from '../../src/core/errors.js';
import { VARCHAR, type LogicalType } from '../../src/core/logical-type.js';
import type { DeclaredSchema } from '../../src/core/declared.js';
import type { Logger } from '../../src/core/types.js';
import {
  deserializeColumns,
  joinDataset,
  serializeColumns,
  textifies,
} from '../../src/sink-kit/output-files/dataset-schema.js';
import { newPublishId } from '../../src/sink-kit/output-files/file-sink.js';
import { LONG_LINE } from '../../src/sink-kit/output-files/ndjson-writer.js';
import { CommitIncompleteError, type Move, type OutputDir } from '../../src/sink-kit/output-files/output-dir.js';
import type { ParquetSinkConfig } from './config.js';
import { copyToParquet, emptyFiles, listFiles, rewriteIfNeeded } from './write-files.js';

/** What a publish needs of its sink. */
export interface PublishScope {
  out: OutputDir;
  /** The sink's in-memory DuckDB, which converts the files. */
  conn: DuckDBConnection;
  config: ParquetSinkConfig;
  log: Logger;
  declared: DeclaredSchema | undefined;
  targetBytes: number;
}

/**
 * One publish of every staged unit, under the sink's publishing lock; resolves to the bytes it read and wrote (the
 * sink's estimate of Parquet bytes per staged byte), or undefined when it wrote none.
 */
export async function publishStaged(p: PublishScope): Promise<{ jsonBytes: number; parquetBytes: number } | undefined> {
  const { out } = p;
  const staged = Object.entries(out.manifest.units).filter(([, u]) => u.staged !== undefined);
  if (staged.length === 0) return;
  // Starting from what earlier publishes wrote keeps one column and struct-field order across all the files of
  // the directory, whichever unit a field first appeared in, and gives new files the dataset's widened types.
  const published = out.manifest.schema && deserializeColumns(out.manifest.schema);
  const parts = [...(published ? [published] : []), ...staged.map(([, u]) => deserializeColumns(u.staged!.schema))];
  const { columns: joined, conflicts } = joinDataset(parts, p.declared);
  const columns = joined ?? new Map<string, LogicalType>();
  // A partition column no record filled yet: null for all of them (the default partition), as DuckDB names it.
  if (columns.size > 0) for (const col of p.config.partition_by ?? []) if (!columns.has(col)) columns.set(col, VARCHAR);
  const cases = conflicts.caseConflicts();
  if (cases.length > 0)
    throw new SluiceError(
      `parquet sink: field names that differ only in case: ${cases.map((c) => c.path).join(', ')}`,
      {
        hint: 'rename one of each pair with the `rename` transform',
      },
    );
  for (const col of p.config.partition_by ?? []) {
    const t = columns.get(col);
    if (t === undefined || t.kind === 'list' || t.kind === 'struct')
      throw new SluiceError(
        `parquet sink: partition column "${col}" is ${t === undefined ? 'not in the data' : `a ${t.kind.toUpperCase()}`}`,
        {
          hint: 'partition by top-level scalar fields (e.g. `partition_by: [country_code]`), or flatten the field first',
        },
      );
  }
  const stagedPaths = await Promise.all(staged.map(([, u]) => out.stagedFile(u.staged!.file)));
  const jsonBytes = staged.reduce((n, [, u]) => n + u.staged!.bytes, 0);
  const publishId = newPublishId(out);
  const tmpOut = out.tempPath(`publish-${publishId}`, 'dir');
  const tmpRewrites = out.tempPath(`rewrite-${publishId}`, 'dir');
  let keep = false;
  try {
    let written: string[] = [];
    if (columns.size > 0) {
      await copyToParquet(p.conn, p.config, {
        files: stagedPaths,
        // Units staged without it were measured when the output opened (restage.ts).
        longestLine: Math.max(...staged.map(([, u]) => u.staged!.longest ?? LONG_LINE)),
        columns,
        dir: tmpOut,
        publishId,
        targetBytes: p.targetBytes,
      });
      written = await listFiles(tmpOut);
    } else {
      // No value decided a column and none is declared: like the DuckDB sink without a table, nothing to store.
      const records = staged.reduce((n, [, u]) => n + u.records, 0);
      p.log.warn(`parquet sink: ${records} record(s) with only null values and no columns: not stored`);
    }
    const moves: Move[] = published ? await rewrites(p, published, columns, tmpRewrites) : [];
    const rewritten = moves.length;
    let parquetBytes = 0;
    const empty = await emptyFiles(p.conn, tmpOut, written);
    for (const rel of written) {
      if (empty.has(rel)) continue;
      moves.push({ from: path.join(tmpOut, rel), to: rel.replace(/\.tmp$/, '.parquet') });
      parquetBytes += (await stat(path.join(tmpOut, rel))).size;
    }
    const files = moves.slice(rewritten).map((m) => m.to);
    await out.commit({
      moves,
      apply: (m) => {
        for (const [id] of staged) {
          const u = m.units[id];
          if (!u) continue;
          delete u.staged;
          u.files = files;
        }
        if (columns.size > 0) m.schema = serializeColumns(columns);
      },
    });
    p.log.info(
      `parquet sink: published ${staged.length} unit(s) as ${files.length} file(s), ${(parquetBytes / 2 ** 20).toFixed(1)} MB` +
        (rewritten > 0 ? `; rewrote ${rewritten} earlier file(s) for columns that became text or JSON` : ''),
    );
    return parquetBytes > 0 ? { jsonBytes, parquetBytes } : undefined;
  } catch (err) {
    keep = err instanceof CommitIncompleteError;
    throw err;
  } finally {
    if (!keep) await Promise.all([tmpOut, tmpRewrites].map((d) => rm(d, { recursive: true, force: true })));
  }
}

/**
 * Published files whose rows a union of the directory would not read as the DuckDB sink's table holds them once
 * the dataset's columns widen from `published` to `columns` (see `rewriteIfNeeded`), rewritten into `tmpDir`.
 * Only a widening into text or JSON needs it. The moves put them back under their own names in the publish's
 * manifest swap, before the new files: a reader never sees a row twice.
 */
async function rewrites(
  p: PublishScope,
  published: ReadonlyMap<string, LogicalType>,
  columns: ReadonlyMap<string, LogicalType>,
  tmpDir: string,
): Promise<Move[]> {
  let any = false;
  for (const [k, t] of published) {
    const u = columns.get(k);
    if (u !== undefined && textifies(t, u)) any = true;
  }
  if (!any) return [];
  const { out } = p;
  const moves: Move[] = [];
  const files = [...new Set(Object.values(out.manifest.units).flatMap((u) => u.files))].sort();
  await mkdir(tmpDir, { recursive: true });
  for (const [i, rel] of files.entries()) {
    const to = path.join(tmpDir, `${i}.tmp`);
    const file = await out.localFile(rel);
    try {
      if (await rewriteIfNeeded(p.conn, p.config, file, to, published, columns)) moves.push({ from: to, to: rel });
    } finally {
      // On S3 `file` is a download into the temp directory.
      if (file !== path.join(out.dataDir, rel)) await rm(file, { force: true });
    }
  }
  return moves;
}
