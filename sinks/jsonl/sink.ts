/**
 * `jsonl` sink: newline-delimited JSON files (optionally gzip) of about a target size, recorded in the directory's
 * `_sluice_manifest.json` (see `output-files/output-dir.ts` for the commit protocol, `replace` generations and the
 * shards' own manifests in one shared directory).
 *
 * How files reach the target size: a unit is often small (a SERP page is a few KB), and one file per unit left
 * thousands of tiny files. So a unit is committed by *staging* it: its lines — in the output's encoding, gzip or
 * not — go to a synced file under `.sluice-staged/`, recorded in the manifest as committed-but-staged (exactly-once
 * holds from that moment). Once the staged bytes reach the target, the staged units are concatenated in commit
 * order into files of about the target size under `.sluice-tmp/`, recorded in the manifest in one atomic manifest
 * swap and then renamed into place; the staged files are then deleted. A run publishes only full files; `finish()`
 * publishes the rest, so the last file of a run may be smaller. Concatenating costs no second encode: gzip files
 * are joined as gzip members (RFC 1952 allows several; gunzip, DuckDB and zlib read them as one stream), and the
 * native path (copy.ts) stages a raw file's bytes as they are. A unit is never split: one larger than the target is
 * a file of its own. Staged units a crash left behind are committed: the next run that finishes publishes them.
 *
 * Lines are the records as they came, except that with declared columns every line has every declared key, first
 * and null when absent. The manifest keeps the dataset's columns (output-files/dataset-schema.ts: inferred from
 * every committed unit, staged or published, on both paths, typed as the other sinks type them), for
 * `currentColumns()`, the schema contract and the changes a commit reports.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, rm, stat } from 'node:fs/promises';
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
import { newPublishId, stageUnit, type FileSinkOptions } from '../../src/sink-kit/output-files/file-sink.js';
import { FileSinkBase, fileSinkDef } from '../../src/sink-kit/output-files/file-sink-base.js';
import { CommitIncompleteError, type OutputDir, type Move } from '../../src/sink-kit/output-files/output-dir.js';
import { unitFileStem } from '../../src/sink-kit/output-files/unit-file-name.js';
import { maxLineBytesOf } from '../../src/sink-kit/raw-jsonl/lines.js';
import { asNativeRefusal, refuseUnlessJsonl } from '../../src/sink-kit/raw-jsonl/refusal.js';
import { DEFAULT_TARGET_FILE_MB, JSONL_LIMITS, jsonlSinkSchema, type JsonlSinkConfig } from './config.js';
import { copyCheckedJsonl } from '../../src/sink-kit/raw-jsonl/checked-copy.js';
import { CopyWorkers } from '../../src/sink-kit/raw-jsonl/copy-workers.js';
import { concatFiles } from './copy.js';

/** How the registry (or a test) makes the sink. */
export type JsonlSinkOptions = FileSinkOptions;

/** A staged unit as a publish takes it: its id and its staged file (relative to the data directory). */
interface StagedUnit {
  id: string;
  file: string;
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
    this.setOpened({ ctx, out: await this.openOutput(ctx) });
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
    return this.stage(unit, commit, async (file, schema) => {
      const { rows } = await writeNdjson(batches, file, { gzipLevel: this.gzipLevel, sync: true, schema, keys });
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
    return this.stage(unit, commit, async (staged, schema) => {
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
          });
          schema.absorb(copied.columns);
          return copied.records;
        }
        const copied = await copyCheckedJsonl(file.path, staged, this.gzipLevel, {
          schema,
          check: judge,
          maxLineBytes: maxLineBytesOf(file),
        });
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
   * output's encoding) into the staging file and returns the records.
   */
  private stage(
    unit: WorkUnit,
    commit: UnitCommit,
    write: (file: string, schema: InferredSchema) => Promise<number>,
  ): Promise<CommitResult> {
    const { out, ctx } = this.opened();
    return stageUnit(out, unit, commit, {
      name: stagedName(unit.id),
      write: async (file, schema) => {
        const rows = await write(file, schema);
        return { rows, bytes: rows > 0 ? (await stat(file)).size : 0 };
      },
      // The unit's own columns are not kept: each commit joins them into the manifest's `schema` at once, and
      // thousands of small staged units would otherwise repeat them in every manifest write.
      stagedColumns: () => [],
      joinColumns: (m, schema) => this.addToSchema(m, schema.columns),
      stagedEnough: () => stagedBytes(out.manifest) >= this.targetBytes,
      publish: () => this.publish(false),
      label: 'jsonl sink',
      log: ctx.log,
    });
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
   * Staged units → files of about the target size, moved into place with one manifest swap. Unless `all`, only
   * full files: units that triggered a publish while another was running must not make a small file.
   */
  protected publish(all: boolean): Promise<void> {
    return this.publishing.run(async () => {
      const { out, ctx } = this.opened();
      const staged = stagedUnits(out.manifest);
      const files = all ? this.pack(staged) : this.fullFiles(staged);
      if (files.length === 0) return;
      const publishId = newPublishId(out);
      const moves: Move[] = [];
      const fileOf = new Map<string, string>();
      let keep = false;
      try {
        for (const [i, group] of files.entries()) {
          const tmp = out.tempPath(`publish-${publishId}-${i}`);
          moves.push({ from: tmp, to: `part-${publishId}-${i}${this.ext}` });
          await concatFiles(await Promise.all(group.map((u) => out.stagedFile(u.file))), tmp);
          for (const u of group) fileOf.set(u.id, moves[i]!.to);
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
        const bytes = files.flat().reduce((n, u) => n + u.bytes, 0);
        ctx.log.info(
          `jsonl sink: published ${fileOf.size} unit(s) as ${files.length} file(s), ${(bytes / 2 ** 20).toFixed(1)} MB`,
        );
      } catch (err) {
        keep = err instanceof CommitIncompleteError;
        if (keep) {
          // Recorded but not all in place: the staged files the manifest no longer names are published data's
          // second copy (the temp files are moved in by finish() or the next open).
          const still = new Set(stagedUnits(out.manifest).map((u) => u.file));
          const done = files.flat().filter((u) => !still.has(u.file));
          const copies = await Promise.all(done.map((u) => out.stagedFile(u.file)));
          await Promise.all(copies.map((f) => rm(f, { force: true })));
        }
        throw err;
      } finally {
        if (!keep) await Promise.all(moves.map((m) => rm(m.from, { force: true })));
      }
    });
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
    if (u.staged) out.push({ id, file: u.staged.file, bytes: u.staged.bytes });
  return out;
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
