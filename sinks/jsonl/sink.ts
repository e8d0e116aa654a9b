/**
 * `jsonl` sink: newline-delimited JSON files (optionally gzip) of about a target size, recorded in the directory's
 * `_sluice_manifest.json` (see `output-files/output-dir.ts` for the commit protocol, `replace` generations and the
 * shards' own manifests in one shared directory).
 *
 * How files reach the target size: a unit is often small (a SERP page is a few KB), and one file per unit left
 * thousands of tiny files. So a unit is committed by *staging* it: its lines — in the output's encoding, gzip or
 * not — are appended to a synced spool file under `.sluice-staged/` (spools.ts), recorded in the manifest as
 * committed-but-staged, a range of that spool (exactly-once holds from that moment). Once a spool holds the target
 * size it is published as it is: linked under `.sluice-tmp/`, recorded in the manifest in one atomic manifest swap
 * and then renamed into place — no byte is copied. Units staged at once go to spools of their own, so a file holds
 * its units in the order they committed to it. A run publishes only full files; `finish()` publishes the rest,
 * the spools' remainders joined (the largest linked, the others appended to it), so the last file of a run may be
 * smaller. Gzip files are gzip members one after the other
 * (RFC 1952 allows several; gunzip, DuckDB and zlib read them as one stream), and the native path (copy.ts) stages
 * a raw file's bytes as they are. A unit is never split: one larger than the target is most of a file of its own.
 * Staged units a crash left behind are committed: the next run that finishes publishes them, copying their ranges
 * into files of about the target size. On S3 every unit is staged in a file of its own (a staged file is uploaded
 * once, when the manifest first names it) and published by joining copies.
 *
 * Lines are the records as they came, except that with declared columns every line has every declared key, first
 * and null when absent. The manifest keeps the dataset's columns (output-files/dataset-schema.ts: inferred from
 * every committed unit, staged or published, on both paths, typed as the other sinks type them), for
 * `currentColumns()`, the schema contract and the changes a commit reports.
 */
import { randomBytes } from 'node:crypto';
import { link, mkdir, rm, stat, truncate } from 'node:fs/promises';
import path from 'node:path';
import type {
  Batch,
  CommitResult,
  CompactSummary,
  Logger,
  RawFile,
  RecordCheck,
  Sink,
  SinkCapabilities,
  SchemaChange,
  SinkContext,
  UnitCommit,
  WorkUnit,
} from '../../src/core/types.js';
import { InferredSchema } from '../../src/schema/infer.js';
import { jsonTypeName, type LogicalType } from '../../src/core/logical-type.js';
import { RecordJudge } from '../../src/schema/storable.js';
import {
  datasetColumns,
  deserializeColumns,
  schemaChanges,
  serializeColumns,
} from '../../src/sink-kit/output-files/dataset-schema.js';
import type { Manifest } from '../../src/sink-kit/output-files/manifest.js';
import { Mutex } from '../../src/core/concurrency.js';
import { writeNdjson } from '../../src/sink-kit/output-files/ndjson-writer.js';
import { compactOutput } from '../../src/sink-kit/output-files/compact.js';
import {
  newPublishId,
  publishFailed,
  stageUnit,
  type FileSinkOptions,
} from '../../src/sink-kit/output-files/file-sink.js';
import { FileSinkBase, fileSinkDef } from '../../src/sink-kit/output-files/file-sink-base.js';
import { CommitIncompleteError, type OutputDir, type Move } from '../../src/sink-kit/output-files/output-dir.js';
import { unitFileStem } from '../../src/sink-kit/output-files/unit-file-name.js';
import { maxLineBytesOf } from '../../src/sink-kit/raw-jsonl/lines.js';
import { asNativeRefusal, refuseUnlessJsonl } from '../../src/sink-kit/raw-jsonl/refusal.js';
import { DEFAULT_TARGET_FILE_MB, JSONL_LIMITS, jsonlSinkSchema, type JsonlSinkConfig } from './config.js';
import { copyCheckedJsonl } from '../../src/sink-kit/raw-jsonl/checked-copy.js';
import { CopyWorkers } from '../../src/sink-kit/raw-jsonl/copy-workers.js';
import { concatFiles, concatRanges } from './copy.js';
import { Spools, type Spool } from './spools.js';
import { isErrno } from '../../src/sink-kit/output-files/fs-durable.js';

/** How the registry (or a test) makes the sink. */
export type JsonlSinkOptions = FileSinkOptions;

/** A staged unit as a publish takes it: its id, its staged file (relative to the data directory) and range there. */
interface StagedUnit {
  id: string;
  file: string;
  offset: number;
  bytes: number;
}

export class JsonlSink extends FileSinkBase<JsonlSinkConfig> implements Sink {
  /** Copying a raw JSONL file's bytes is this sink's native path. */
  readonly capabilities: SinkCapabilities;
  private readonly publishing = new Mutex();
  /** The native path's copies on worker threads (raw-jsonl/copy-workers.ts), started with the first one. */
  private workers: CopyWorkers | undefined;
  private readonly gzipLevel: number | undefined;
  private readonly ext: string;
  private readonly targetBytes: number;
  /** This run's spools (spools.ts); undefined on S3, where each unit is staged in a file of its own. */
  private spools: Spools | undefined;

  constructor(config: JsonlSinkConfig, options: JsonlSinkOptions = {}) {
    // Gzip or not; temp and staged files are never named `.jsonl` (`stagedName`).
    super(config, options, 'jsonl', {
      pattern: '*.jsonl*',
      reader: (glob) => `read_json_auto(${glob}, format = 'newline_delimited', union_by_name = true)`,
      countIsCheap: false,
    });
    const compress = config.compress ?? config.path.endsWith('.gz');
    this.gzipLevel = compress ? config.gzip_level : undefined;
    this.ext = compress ? '.jsonl.gz' : '.jsonl';
    this.targetBytes = Math.max(1, Math.round((config.target_file_mb ?? DEFAULT_TARGET_FILE_MB) * 2 ** 20));
    this.capabilities = {
      native: { formats: ['jsonl'], load: (unit, file, commit, check) => this.copyFile(unit, file, commit, check) },
      limits: JSONL_LIMITS,
      files: this.fileOutput(),
    };
  }

  /** JSON has no column types: what a value of the column is written as. */
  typeName(t: LogicalType): string {
    return jsonTypeName(t);
  }

  async open(ctx: SinkContext): Promise<void> {
    const out = await this.openOutput(ctx);
    this.spools = out.isLocal ? new Spools() : undefined;
    this.setOpened({ ctx, out });
  }

  /**
   * The columns of every committed unit's rows, joined (dataset-schema.ts), with the declared ones; undefined until
   * a unit with rows is committed. JSON has no column types: these are what the values are, typed as the other
   * sinks type them, so a schema contract judges every sink alike.
   */
  async currentColumns(): Promise<ReadonlyMap<string, LogicalType> | undefined> {
    const s = this.opened().out.manifest.schema;
    return s && deserializeColumns(s);
  }

  async writeUnit(unit: WorkUnit, batches: AsyncIterable<Batch>, commit: UnitCommit): Promise<CommitResult> {
    const { out, ctx } = this.opened();
    if (out.isCommitted(unit.id)) return { committed: false, records: 0 };
    const keys = ctx.declared?.map((c) => c.name);
    return this.stage(unit, commit, async (file, schema, append) => {
      const { rows } = await writeNdjson(batches, file, {
        gzipLevel: this.gzipLevel,
        sync: true,
        schema,
        keys,
        append,
      });
      return rows;
    });
  }

  /**
   * Native path: the unit's JSONL file is checked line by line (each record judged by `check`) and copied, not
   * parsed into rows and rewritten. A line is copied as it came: one with a key twice in an object stays so (JSON
   * readers take the last value, as the JS path would have written it).
   */
  private async copyFile(
    unit: WorkUnit,
    file: RawFile,
    commit: UnitCommit,
    check?: RecordCheck,
  ): Promise<CommitResult> {
    refuseUnlessJsonl('jsonl sink', file);
    if (this.opened().out.isCommitted(unit.id)) return { committed: false, records: 0 };
    const judge = check ?? new RecordJudge(JSONL_LIMITS);
    return this.stage(unit, commit, async (staged, schema, append) => {
      try {
        // Units read at once are copied side by side on worker threads when the judge can go with them.
        if (judge instanceof RecordJudge && judge.stateless && CopyWorkers.available()) {
          this.workers ??= new CopyWorkers();
          const copied = await this.workers.copy({
            src: file.path,
            dest: staged,
            gzipLevel: this.gzipLevel,
            limits: judge.limits,
            maxLineBytes: maxLineBytesOf(file),
            append,
          });
          schema.absorb(copied.columns);
          return copied.records;
        }
        const copied = await copyCheckedJsonl(
          file.path,
          staged,
          this.gzipLevel,
          { schema, check: judge, maxLineBytes: maxLineBytesOf(file) },
          append,
        );
        return copied.records;
      } catch (err) {
        throw asNativeRefusal('jsonl sink', err);
      }
    });
  }

  override async close(): Promise<void> {
    await super.close();
    const workers = this.workers;
    this.workers = undefined;
    await workers?.close();
  }

  /** Files are joined as they are, lines in file-name order (gzip members stay members, as a publish joins them). */
  protected compactWith(out: OutputDir, minFiles: number, log: Logger): Promise<CompactSummary> {
    return compactOutput(out, {
      targetBytes: this.targetBytes,
      minFiles,
      ext: this.ext,
      label: 'jsonl sink',
      log,
      rewrite: async (inputs, dir, publishId) => {
        await mkdir(dir, { recursive: true });
        const name = `part-${publishId}-0.tmp`;
        await concatFiles(inputs, path.join(dir, name));
        return [name];
      },
    });
  }

  /**
   * Commits a unit as staged (output-files/file-sink.ts): `write` puts its lines (each ending in a newline, in the
   * output's encoding) into the staging file — after its bytes when `append` (a spool) — and returns the records.
   */
  private async stage(
    unit: WorkUnit,
    commit: UnitCommit,
    write: (file: string, schema: InferredSchema, append: boolean) => Promise<number>,
  ): Promise<CommitResult> {
    const { out, ctx } = this.opened();
    const common = {
      // The unit's own columns are not kept: each commit joins them into the manifest's `schema` at once, and
      // thousands of small staged units would otherwise repeat them in every manifest write.
      stagedColumns: () => [],
      joinColumns: (m: Manifest, schema: InferredSchema) => this.addToSchema(m, schema.columns),
      label: 'jsonl sink',
      log: ctx.log,
    };
    const spools = this.spools;
    if (!spools)
      return stageUnit(out, unit, commit, {
        ...common,
        name: stagedName(unit.id),
        write: async (file, schema) => {
          const rows = await write(file, schema, false);
          return { rows, bytes: rows > 0 ? (await stat(file)).size : 0 };
        },
        publishing: {
          stagedEnough: () => stagedBytes(out.manifest) >= this.targetBytes,
          publish: () => this.publish(false),
        },
      });
    const spool = spools.take();
    let result: CommitResult;
    try {
      const file = path.join(out.stagedDir, spool.name);
      await cutToCommitted(file, spool);
      let added = 0;
      result = await stageUnit(out, unit, commit, {
        ...common,
        name: spool.name,
        offset: spool.size,
        write: async (f, schema) => {
          const rows = await write(f, schema, true);
          added = rows > 0 ? (await stat(f)).size - spool.size : 0;
          return { rows, bytes: added };
        },
        // No `publishing`: the spool is published once it is back in the pool, below.
      });
      if (result.committed) spool.size += added;
    } finally {
      spools.give(spool);
    }
    if (spool.size >= this.targetBytes)
      await this.publish(false).catch((err: unknown) => ctx.log.warn(publishFailed('jsonl sink', err)));
    return result;
  }

  /**
   * `units` (in commit order) packed into files: a file closes once it holds the target size, so every file but
   * the last is at least the target, and exceeds it by less than one unit.
   */
  private pack(units: StagedUnit[]): StagedUnit[][] {
    const files: StagedUnit[][] = [];
    let current: StagedUnit[] = [];
    let bytes = 0;
    for (const u of units) {
      current.push(u);
      bytes += u.bytes;
      if (bytes >= this.targetBytes) {
        files.push(current);
        current = [];
        bytes = 0;
      }
    }
    if (current.length > 0) files.push(current);
    return files;
  }

  /** The files of `units` that hold the target size; a last, smaller one waits for more units. */
  private fullFiles(units: StagedUnit[]): StagedUnit[][] {
    const files = this.pack(units);
    const last = files.at(-1);
    if (last && last.reduce((n, u) => n + u.bytes, 0) < this.targetBytes) files.pop();
    return files;
  }

  /**
   * Staged units → files of about the target size, moved into place with one manifest swap: this run's full spools
   * linked as they are, units staged elsewhere copied into files. Unless `all`, only full files: units that
   * triggered a publish while another was running must not make a small file.
   */
  protected publish(all: boolean): Promise<void> {
    return this.publishing.run(async () => {
      const { out, ctx } = this.opened();
      const staged = stagedUnits(out.manifest);
      const filling = this.spools?.names() ?? new Set<string>();
      const spools = this.spools?.takeFull(all ? 0 : this.targetBytes) ?? [];
      const ofSpool = new Map(spools.map((sp) => [`${out.stagedRel}/${sp.name}`, sp]));
      const inSpools = new Map<Spool, StagedUnit[]>(spools.map((sp) => [sp, []]));
      const others: StagedUnit[] = [];
      for (const u of staged) {
        const sp = ofSpool.get(u.file);
        if (sp) inSpools.get(sp)!.push(u);
        else if (!filling.has(path.posix.basename(u.file))) others.push(u);
      }
      const taken = [...inSpools].filter(([, us]) => us.length > 0);
      const files: PublishFile[] = taken
        .filter(([sp]) => sp.size >= this.targetBytes)
        .map(([spool, units]) => ({ spool, units }));
      if (all) {
        const packs = this.pack(others);
        const last = packs.at(-1);
        const looseUnits = last && bytesOf(last) < this.targetBytes ? packs.pop()! : [];
        files.push(...packs.map((units) => ({ units })));
        const small = taken.filter(([sp]) => sp.size < this.targetBytes).sort(([a], [b]) => b.size - a.size);
        files.push(
          ...this.joinSmall([
            ...small.map(([spool, units]) => ({ spool, units })),
            ...looseUnits.map((u) => ({ units: [u] })),
          ]),
        );
      } else files.push(...this.fullFiles(others).map((units) => ({ units })));
      if (files.length === 0) return;
      const publishId = newPublishId(out);
      const moves: Move[] = [];
      const fileOf = new Map<string, string>();
      let keep = false;
      try {
        for (const [i, { units, spool }] of files.entries()) {
          const tmp = out.tempPath(`publish-${publishId}-${i}`);
          moves.push({ from: tmp, to: `part-${publishId}-${i}${this.ext}` });
          await this.writeFile(out, { units, ...(spool && { spool }) }, tmp);
          for (const u of units) fileOf.set(u.id, moves[i]!.to);
        }
        await out.commit({
          moves,
          apply: (m) => {
            for (const [id, name] of fileOf) {
              const u = m.units[id];
              if (!u) continue;
              delete u.staged;
              u.files = [name];
            }
          },
        });
        const bytes = files.flatMap((f) => f.units).reduce((n, u) => n + u.bytes, 0);
        const copied = files.filter((f) => !f.spool).length;
        ctx.log.info(
          `jsonl sink: published ${fileOf.size} unit(s) as ${files.length} file(s), ${(bytes / 2 ** 20).toFixed(1)} MB` +
            (copied > 0 ? ` (${copied} of them joined from staged files)` : ''),
        );
      } catch (err) {
        keep = err instanceof CommitIncompleteError;
        if (keep) {
          // Recorded but not all in place: the staged files the manifest no longer names are published data's
          // second name or copy (the temp files are moved in by finish() or the next open).
          const still = new Set(stagedUnits(out.manifest).map((u) => u.file));
          const done = [...new Set(files.flatMap((f) => f.units).map((u) => u.file))].filter((f) => !still.has(f));
          const gone = await Promise.all(done.map((f) => out.stagedFile(f)));
          await Promise.all(gone.map((f) => rm(f, { force: true })));
        }
        throw err;
      } finally {
        if (!keep) await Promise.all(moves.map((m) => rm(m.from, { force: true })));
      }
    });
  }

  /**
   * A run's smaller remainders (its spools under the target, largest first, then units staged elsewhere) joined as
   * `pack` joins units: a file closes once it holds the target size, so a run ends with one small file, not one per
   * unit staged at once. Each file starts with a spool where one is left, so only the smaller remainders are copied.
   */
  private joinSmall(items: PublishFile[]): PublishFile[] {
    const files: PublishFile[] = [];
    let current: PublishFile | undefined;
    let bytes = 0;
    for (const item of items) {
      const b = bytesOf(item.units);
      if (current && bytes < this.targetBytes) {
        current.units.push(...item.units);
        bytes += b;
      } else {
        current = { units: [...item.units], ...(item.spool && { spool: item.spool }) };
        files.push(current);
        bytes = b;
      }
    }
    return files;
  }

  /**
   * A published file's bytes at `tmp`. Its spool (whose units hold it from its first byte to its last) is cut to
   * its committed length, the other units' ranges added after it, and linked; without a spool, or where the file
   * system has no hard links, every unit's range is copied.
   */
  private async writeFile(out: OutputDir, file: PublishFile, tmp: string): Promise<void> {
    const ranges = await Promise.all(
      file.units.map(async (u) => ({ path: await out.stagedFile(u.file), start: u.offset, bytes: u.bytes })),
    );
    const spool = file.spool;
    const own = spool ? file.units.findIndex((u) => path.posix.basename(u.file) !== spool.name) : 0;
    const base = own < 0 ? file.units.length : own;
    if (spool && base > 0 && whole(file.units.slice(0, base), spool.size)) {
      const at = ranges[0]!.path;
      await truncate(at, spool.size);
      // Bytes after the committed ones are no unit's until the publish commits: a crash before leaves them to the
      // next cut.
      if (base < ranges.length) await concatRanges(ranges.slice(base), at, { append: true });
      try {
        await link(at, tmp);
        return;
      } catch (err) {
        if (!isErrno(err, 'EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'EXDEV', 'EMLINK')) throw err;
      }
    }
    await concatRanges(ranges, tmp);
  }

  /** Joins a committed unit's columns into the dataset's (under the commit lock); returns what that changed. */
  private addToSchema(m: Manifest, unitColumns: ReadonlyMap<string, LogicalType>): SchemaChange[] {
    const before = m.schema && deserializeColumns(m.schema);
    const after = datasetColumns([...(before ? [before] : []), unitColumns], this.opened().ctx.declared);
    if (!after) return [];
    m.schema = serializeColumns(after);
    return schemaChanges(before, after, (t) => this.typeName(t));
  }
}

/** The manifest's staged units, in commit order (the order the manifest lists them). */
function stagedUnits(m: Manifest): StagedUnit[] {
  const out: StagedUnit[] = [];
  for (const [id, u] of Object.entries(m.units))
    if (u.staged) out.push({ id, file: u.staged.file, offset: u.staged.offset ?? 0, bytes: u.staged.bytes });
  return out;
}

/** A file a publish writes: its units, in the order of their bytes; started by this run's `spool` when given. */
interface PublishFile {
  units: StagedUnit[];
  spool?: Spool;
}

function bytesOf(units: readonly StagedUnit[]): number {
  return units.reduce((n, u) => n + u.bytes, 0);
}

/** Whether `units` (in commit order) hold a spool of `size` bytes from its first byte to its last, nothing else. */
function whole(units: readonly StagedUnit[], size: number): boolean {
  let at = 0;
  for (const u of units) {
    if (u.offset !== at) return false;
    at += u.bytes;
  }
  return at === size;
}

/**
 * Cuts the spool to the bytes committed units hold of it: what a unit that failed or was not committed left there
 * (its cut may have failed too) goes before another unit's range starts. A new spool is not there yet.
 */
async function cutToCommitted(file: string, spool: Spool): Promise<void> {
  try {
    await truncate(file, spool.size);
  } catch (err) {
    if (!(spool.size === 0 && isErrno(err, 'ENOENT'))) throw err;
  }
}

function stagedBytes(m: Manifest): number {
  let n = 0;
  for (const u of Object.values(m.units)) n += u.staged?.bytes ?? 0;
  return n;
}

/**
 * A staging file's name: the unit's readable stem without dots, so that no glob for data files (`**\/*.jsonl*`)
 * lists it, whatever the unit id holds (`file:in.jsonl`).
 */
function stagedName(unitId: string): string {
  return `${unitFileStem(unitId).replace(/\./g, '_')}.${randomBytes(4).toString('hex')}.staged`;
}

export const jsonlSink = fileSinkDef<JsonlSinkConfig>({
  type: 'jsonl',
  description: 'Newline-delimited JSON files (optionally gzip) of about a target size, with a manifest.',
  schema: jsonlSinkSchema,
  make: (config, options) => new JsonlSink(config, options),
});
