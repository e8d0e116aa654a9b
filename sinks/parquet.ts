/**
 * `parquet` sink: Parquet files written by DuckDB's writer (`COPY … TO … (FORMAT parquet)`), with native
 * STRUCT / LIST / TIMESTAMP / DATE columns from the inferred schema.
 *
 * How files reach the target size: units are often small (a 1,000-record snapshot part is ~0.3 MB of Parquet), and
 * one file per unit would leave thousands of tiny files. So a unit is committed by *staging* it: its rows go to a
 * synced NDJSON file under `.sluice-staged/`, recorded in the manifest as committed-but-staged (exactly-once holds
 * from that moment). When the staged data would make a file of about the target size — and always in `finish()` —
 * the staged units are published together: one `COPY` reads them all (`read_json` with the merged schema) and
 * writes target-size Parquet files to `.sluice-tmp/`, which are recorded in the manifest in one atomic manifest swap
 * and then renamed into place; the staged files are then deleted. Readers only ever see complete, full-size files
 * (the last one of a run may be smaller) and never a duplicate; staging costs no second Parquet encode, and the
 * manifest-listed staging files survive a crash. With `partition_by`, one publish writes a file per partition
 * present, so files are smaller by the number of partitions (raise `target_file_mb` to compensate).
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { z } from 'zod';
import { SluiceError } from '../src/core/errors.js';
import { failpoint } from '../src/core/failpoints.js';
import type {
  Batch,
  CommitResult,
  ComponentDef,
  ComponentDeps,
  Sink,
  SinkContext,
  WorkUnit,
} from '../src/core/types.js';
import { duckdbType, quoteIdent, quoteString } from '../src/schema/duckdb-types.js';
import { InferredSchema } from '../src/schema/infer.js';
import { deserializeType, serializeType } from '../src/schema/logical-type.js';
import type { ManifestUnit } from './common/manifest.js';
import { Mutex } from './common/mutex.js';
import { writeNdjson } from './common/ndjson-writer.js';
import { CommitIncompleteError, OutputDir, STAGED_DIR, type FileSinkHooks, type Move } from './common/output-dir.js';
import { unitFileStem } from './common/unit-file-name.js';

export const DEFAULT_TARGET_FILE_MB = 128;
/**
 * Rows per row group. DuckDB buffers a whole row group before compressing it, so this bounds the writer's memory:
 * its default (122,880) holds ~400 MB of company profiles; 20,000 keeps a load within the 300 MB budget at a
 * measured size cost of a few percent (`bench/sinks.ts`).
 */
export const DEFAULT_ROW_GROUP_SIZE = 20_000;
/** Staged NDJSON bytes per Parquet byte before any publish has measured it (company profiles, zstd: ~6). */
const INITIAL_JSON_PER_PARQUET = 6;

export const parquetSinkSchema = z
  .object({
    type: z.literal('parquet'),
    path: z
      .string()
      .min(1)
      .describe(
        'Output directory, relative to the pipeline file; created if missing. Files are `part-<id>-<n>.parquet` (under `<column>=<value>/` directories with `partition_by`), listed with the units they hold in `_sluice_manifest.json`.',
      ),
    write: z
      .enum(['append', 'replace'])
      .default('append')
      .describe(
        '`append`: every run adds files. `replace`: the run writes a new generation and `path` (then a symlink) switches to it atomically when the run finishes.',
      ),
    compression: z
      .enum(['zstd', 'snappy', 'gzip', 'lz4', 'brotli', 'uncompressed'])
      .default('zstd')
      .describe('Parquet compression codec.'),
    compression_level: z
      .number()
      .int()
      .min(1)
      .max(22)
      .optional()
      .describe('Codec level, for zstd (1–22; DuckDB default 3) and gzip/brotli.'),
    row_group_size: z
      .number()
      .int()
      .min(1_000)
      .default(DEFAULT_ROW_GROUP_SIZE)
      .describe(
        `Rows per row group (default ${DEFAULT_ROW_GROUP_SIZE}). The writer holds a whole row group in memory: larger groups compress a little better and cost memory.`,
      ),
    partition_by: z
      .array(z.string().min(1))
      .min(1)
      .optional()
      .describe(
        'Columns to partition by, hive style (`country_code=US/part-….parquet`); the values live in the directory names, not in the files (read with `hive_partitioning = true`).',
      ),
    target_file_mb: z
      .number()
      .positive()
      .optional()
      .describe(
        `Target size of a Parquet file in MB (default ${DEFAULT_TARGET_FILE_MB}). Units are staged until their rows make a file of about this size, then published together; the last file of a run may be smaller.`,
      ),
    file_size_bytes: z
      .number()
      .int()
      .positive()
      .optional()
      .describe('The target file size in bytes, instead of `target_file_mb`.'),
  })
  .strict()
  .superRefine((c, ctx) => {
    if (c.target_file_mb !== undefined && c.file_size_bytes !== undefined)
      ctx.addIssue({
        code: 'custom',
        path: ['file_size_bytes'],
        message: 'give either `target_file_mb` or `file_size_bytes`, not both',
      });
  });

export type ParquetSinkConfig = z.infer<typeof parquetSinkSchema>;

export class ParquetSink implements Sink {
  private ctx: SinkContext | undefined;
  private out: OutputDir | undefined;
  private db: DuckDBInstance | undefined;
  private conn: DuckDBConnection | undefined;
  private readonly publishing = new Mutex();
  private readonly targetBytes: number;
  private jsonPerParquet = INITIAL_JSON_PER_PARQUET;

  constructor(
    private readonly config: ParquetSinkConfig,
    private readonly hooks: FileSinkHooks = {},
  ) {
    this.targetBytes =
      config.file_size_bytes ?? Math.round((config.target_file_mb ?? DEFAULT_TARGET_FILE_MB) * 2 ** 20);
  }

  async open(ctx: SinkContext): Promise<void> {
    this.ctx = ctx;
    this.out = await OutputDir.open({
      root: path.resolve(ctx.baseDir, this.config.path),
      mode: this.config.write,
      fresh: ctx.fresh,
      pipeline: ctx.pipeline,
      format: 'parquet',
      label: 'parquet sink',
      log: ctx.log,
      hooks: this.hooks,
    });
    await mkdir(this.out.stagedDir, { recursive: true });
    // An in-memory database of its own: it only converts files, and must not lock any database file.
    this.db = await DuckDBInstance.create(':memory:');
    this.conn = await this.db.connect();
    await this.conn.run(`SET TimeZone = 'UTC'`);
    // One thread, freed memory handed back: the JS pass that stages the next units keeps the other core busy.
    // Measured over 200k company profiles (`npm run bench -- --only sluice-parquet`, five runs each): peak RSS
    // 695–742 → 484–561 MB; wall 7.4–9.5 → 8.4–9.4 s, CPU 9.9–12.7 → 9.3–10.5 s. A memory limit would bound it
    // further (256 MB: 526 MB) but makes a publish of wide rows fail where DuckDB could have finished it (128 MB
    // ran out of memory; 192 MB spilled, 1.6× slower).
    await this.conn.run('SET threads = 1');
    await this.conn.run(`SET allocator_flush_threshold = '32MB'`);
  }

  async committedUnits(): Promise<Set<string>> {
    return this.dir().committedUnits();
  }

  async writeUnit(unit: WorkUnit, batches: AsyncIterable<Batch>): Promise<CommitResult> {
    const out = this.dir();
    if (out.isCommitted(unit.id)) return { committed: false, records: 0 };
    const name = `${unitFileStem(unit.id)}.${randomBytes(4).toString('hex')}.staged`;
    const file = path.join(out.stagedDir, name);
    const schema = new InferredSchema();
    let committed = false;
    try {
      const { rows, bytes } = await writeNdjson(batches, file, { schema, sync: true });
      const cases = schema.conflicts.caseConflicts();
      if (cases.length > 0)
        throw new SluiceError(
          `parquet sink: field names that differ only in case: ${cases.map((c) => `${c.path} (${c.seen.join(' / ')})`).join(', ')}`,
          { hint: 'Parquet readers match names ignoring case: rename one of each pair with the `rename` transform' },
        );
      if (schema.conflicts.size > 0)
        this.context().log.warn(`parquet sink: unit ${unit.id}: ${schema.conflicts.format()}`);
      failpoint('parquet:staged');
      const entry: ManifestUnit = { records: rows, files: [], committed_at: new Date().toISOString() };
      if (rows > 0)
        entry.staged = {
          file: `${STAGED_DIR}/${name}`,
          bytes,
          schema: [...schema.columns].map(([k, t]) => [k, serializeType(t)]),
        };
      committed = await out.commit({
        moves: [],
        check: (m) => !Object.hasOwn(m.units, unit.id),
        apply: (m) => {
          m.units[unit.id] = entry;
        },
      });
      if (rows === 0) await rm(file, { force: true });
      if (committed && this.stagedEnough()) {
        // The unit is committed either way; a publish that fails now is retried by finish(), which reports it.
        await this.publish(false).catch((err: unknown) =>
          this.context().log.warn(`parquet sink: publishing staged units failed, retried at the end: ${String(err)}`),
        );
      }
      return { committed, records: committed ? rows : 0 };
    } finally {
      if (!committed) await rm(file, { force: true });
    }
  }

  /** Publishes whatever is still staged, then (for `replace`) swaps the new generation in. */
  async finish(): Promise<void> {
    await this.publish(true);
    await this.dir().finish();
  }

  async close(): Promise<void> {
    this.conn?.closeSync();
    this.db?.closeSync();
    this.conn = undefined;
    this.db = undefined;
    this.out = undefined;
  }

  /** Staged rows would make a file of about the target size. */
  private stagedEnough(): boolean {
    let n = 0;
    for (const u of Object.values(this.dir().manifest.units)) n += u.staged?.bytes ?? 0;
    return n >= this.targetBytes * this.jsonPerParquet;
  }

  /**
   * Every staged unit → target-size Parquet files, moved into place with one manifest swap. Unless `all`, only
   * when enough is staged: units that triggered a publish while another was running must not make a small file.
   */
  private publish(all: boolean): Promise<void> {
    return this.publishing.run(async () => {
      if (!all && !this.stagedEnough()) return;
      const out = this.dir();
      const staged = Object.entries(out.manifest.units).filter(([, u]) => u.staged !== undefined);
      if (staged.length === 0) return;
      const schema = new InferredSchema();
      // Starting from what earlier publishes wrote keeps one column and struct-field order across all the files of
      // the directory, whichever unit a field first appeared in.
      if (out.manifest.schema) schema.absorb(new Map(out.manifest.schema.map(([k, s]) => [k, deserializeType(s)])));
      for (const [, u] of staged) schema.absorb(new Map(u.staged!.schema.map(([k, s]) => [k, deserializeType(s)])));
      const cases = schema.conflicts.caseConflicts();
      if (cases.length > 0)
        throw new SluiceError(
          `parquet sink: field names that differ only in case: ${cases.map((c) => c.path).join(', ')}`,
          {
            hint: 'rename one of each pair with the `rename` transform',
          },
        );
      for (const col of this.config.partition_by ?? []) {
        const t = schema.column(col);
        if (t === undefined || t.kind === 'list' || t.kind === 'struct')
          throw new SluiceError(
            `parquet sink: partition column "${col}" is ${t === undefined ? 'not in the data' : `a ${t.kind.toUpperCase()}`}`,
            {
              hint: 'partition by top-level scalar fields (e.g. `partition_by: [country_code]`), or flatten the field first',
            },
          );
      }
      const stagedPaths = staged.map(([, u]) => path.join(out.dataDir, u.staged!.file));
      const jsonBytes = staged.reduce((n, [, u]) => n + u.staged!.bytes, 0);
      const publishId = `${new Date().toISOString().replace(/[-:.TZ]/g, '')}-${randomBytes(3).toString('hex')}`;
      const tmpOut = out.tempPath(`publish-${publishId}`, 'dir');
      let keep = false;
      try {
        await this.copyToParquet(stagedPaths, schema, tmpOut, publishId);
        const moves: Move[] = [];
        let parquetBytes = 0;
        const written = await listFiles(tmpOut);
        const empty = await this.emptyFiles(tmpOut, written);
        for (const rel of written) {
          if (empty.has(rel)) continue;
          moves.push({ from: path.join(tmpOut, rel), to: rel.replace(/\.tmp$/, '.parquet') });
          parquetBytes += (await stat(path.join(tmpOut, rel))).size;
        }
        const files = moves.map((m) => m.to);
        await out.commit({
          moves,
          apply: (m) => {
            for (const [id] of staged) {
              const u = m.units[id];
              if (!u) continue;
              delete u.staged;
              u.files = files;
            }
            m.schema = [...schema.columns].map(([k, t]) => [k, serializeType(t)]);
          },
          after: async () => {
            await Promise.all(stagedPaths.map((p) => rm(p, { force: true })));
          },
        });
        if (parquetBytes > 0) this.jsonPerParquet = Math.max(1, jsonBytes / parquetBytes);
        this.context().log.info(
          `parquet sink: published ${staged.length} unit(s) as ${files.length} file(s), ${(parquetBytes / 2 ** 20).toFixed(1)} MB`,
        );
      } catch (err) {
        keep = err instanceof CommitIncompleteError;
        throw err;
      } finally {
        if (!keep) await rm(tmpOut, { recursive: true, force: true });
      }
    });
  }

  /**
   * Files of `written` (relative to `dir`) that hold no rows. DuckDB starts the next file as soon as a row group takes
   * a file past FILE_SIZE_BYTES, even after the last row group: a publish whose data ends there leaves an empty file.
   */
  private async emptyFiles(dir: string, written: string[]): Promise<Set<string>> {
    if (written.length === 0) return new Set();
    const list = `[${written.map((rel) => quoteString(path.join(dir, rel))).join(', ')}]`;
    const r = await this.connection().runAndReadAll(
      `SELECT file_name FROM parquet_file_metadata(${list}) WHERE num_rows = 0`,
    );
    return new Set(
      r.getRowObjectsJS().map((row) => path.relative(dir, String(row.file_name)).split(path.sep).join('/')),
    );
  }

  private async copyToParquet(files: string[], schema: InferredSchema, dir: string, publishId: string): Promise<void> {
    const specs = [...schema.columns].map(
      ([k, t]) => `${quoteString(k)}: ${quoteString(duckdbType(t, { openAs: 'VARCHAR' }))}`,
    );
    const c = this.config;
    const options = [
      'FORMAT parquet',
      `COMPRESSION ${c.compression}`,
      ...(c.compression_level !== undefined ? [`COMPRESSION_LEVEL ${c.compression_level}`] : []),
      `ROW_GROUP_SIZE ${c.row_group_size}`,
      `FILENAME_PATTERN ${quoteString(`part-${publishId}-{i}`)}`,
      // Not `.parquet` until renamed into place: a reader's glob never matches a file being written.
      `FILE_EXTENSION 'tmp'`,
      // DuckDB cannot split partitioned output by size; a partition's file holds what one publish has for it.
      c.partition_by
        ? `PARTITION_BY (${c.partition_by.map(quoteIdent).join(', ')})`
        : `FILE_SIZE_BYTES ${this.targetBytes}`,
    ];
    const list = `[${files.map(quoteString).join(', ')}]`;
    try {
      await this.connection().run(
        `COPY (SELECT * FROM read_json(${list}, format = 'newline_delimited', columns = {${specs.join(', ')}})) TO ${quoteString(dir)} (${options.join(', ')})`,
      );
    } catch (err) {
      throw new SluiceError(`parquet sink: could not write Parquet: ${(err as Error).message.split('\n')[0]}`, {
        hint: 'the staged units are kept (committed) and published by the next run that finishes; fix the cause and run again',
        cause: err,
      });
    }
  }

  private context(): SinkContext {
    if (!this.ctx) throw new Error('parquet sink used before open()');
    return this.ctx;
  }

  private dir(): OutputDir {
    if (!this.out) throw new Error('parquet sink used before open()');
    return this.out;
  }

  private connection(): DuckDBConnection {
    if (!this.conn) throw new Error('parquet sink used before open()');
    return this.conn;
  }
}

/** Relative paths (`/`-separated) of the files under `dir`. */
async function listFiles(dir: string, prefix = ''): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(path.join(dir, prefix), { withFileTypes: true })) {
    const rel = prefix ? `${prefix}/${e.name}` : e.name;
    if (e.isDirectory()) out.push(...(await listFiles(dir, rel)));
    else out.push(rel);
  }
  return out.sort();
}

export const parquetSink: ComponentDef<'sink', ParquetSinkConfig, Sink> = {
  kind: 'sink',
  type: 'parquet',
  description: 'Parquet files (zstd, optionally hive-partitioned) of about a target size, with a manifest.',
  schema: parquetSinkSchema,
  create(config: ParquetSinkConfig, _deps: ComponentDeps): Sink {
    return new ParquetSink(config);
  },
};
