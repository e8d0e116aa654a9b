/**
 * `jsonl` sink: one newline-delimited JSON file per work unit, recorded in the directory's `_sluice_manifest.json`
 * and then renamed into place (see `output-files/output-dir.ts` for the commit protocol and `replace` generations).
 * Its native path copies a unit's raw JSONL file as it is (copy.ts).
 */
import path from 'node:path';
import { rm } from 'node:fs/promises';
import type { ComponentDef, ComponentDeps } from '../../src/core/component.js';
import type {
  Batch,
  CommitResult,
  OutputQuery,
  RawFile,
  Sink,
  SinkCapabilities,
  SinkContext,
  WorkUnit,
} from '../../src/core/types.js';
import { quoteString } from '../../src/schema/duckdb-types.js';
import { jsonTypeName, type LogicalType } from '../../src/schema/logical-type.js';
import { displayPath } from '../display-path.js';
import { writeNdjson } from '../output-files/ndjson-writer.js';
import { CommitIncompleteError, OutputDir, outputLockPath, type FileSinkHooks } from '../output-files/output-dir.js';
import { unitFileStem } from '../output-files/unit-file-name.js';
import { asNativeRefusal, refuseUnlessJsonl } from '../raw-jsonl/refusal.js';
import { jsonlSinkSchema, type JsonlSinkConfig } from './config.js';
import { copyCheckedJsonl } from './copy.js';

export interface JsonlSinkOptions {
  /** The pipeline file's directory, which `path` is relative to; describe() shows `path` as written without it. */
  baseDir?: string;
  hooks?: FileSinkHooks;
}

export class JsonlSink implements Sink {
  /** Copying a raw JSONL file's bytes is this sink's native path. */
  readonly capabilities: SinkCapabilities = { nativeFormats: ['jsonl'] };
  private out: OutputDir | undefined;
  private readonly gzipLevel: number | undefined;
  private readonly ext: string;
  private readonly baseDir: string | undefined;
  private readonly hooks: FileSinkHooks;

  constructor(
    private readonly config: JsonlSinkConfig,
    options: JsonlSinkOptions = {},
  ) {
    const compress = config.compress ?? config.path.endsWith('.gz');
    this.gzipLevel = compress ? config.gzip_level : undefined;
    this.ext = compress ? '.jsonl.gz' : '.jsonl';
    this.baseDir = options.baseDir;
    this.hooks = options.hooks ?? {};
  }

  /** JSON has no column types: what a value of the column is written as. */
  typeName(t: LogicalType): string {
    return jsonTypeName(t);
  }

  describe(): string {
    return `jsonl ${displayPath(this.config.path, this.baseDir)}`;
  }

  /** Every unit file under the directory (gzip or not); temp files under `.sluice-tmp/` are never named `.jsonl`. */
  outputQuery(limit: number): OutputQuery {
    const files = path.join(path.resolve(this.baseDir ?? '.', this.config.path), '**', '*.jsonl*');
    return {
      sql: `SELECT * FROM read_json_auto(${quoteString(files)}, format = 'newline_delimited', union_by_name = true) LIMIT ${limit}`,
    };
  }

  /** Two pipelines writing to one directory would each remove the other's temp files as orphans. */
  lockPath(baseDir: string): string {
    return outputLockPath(path.resolve(baseDir, this.config.path), this.config.write);
  }

  async open(ctx: SinkContext): Promise<void> {
    this.out = await OutputDir.open({
      root: path.resolve(ctx.baseDir, this.config.path),
      mode: this.config.write,
      fresh: ctx.fresh,
      pipeline: ctx.pipeline,
      format: 'jsonl',
      label: 'jsonl sink',
      log: ctx.log,
      hooks: this.hooks,
    });
  }

  async committedUnits(): Promise<Set<string>> {
    return this.dir().committedUnits();
  }

  async writeUnit(unit: WorkUnit, batches: AsyncIterable<Batch>): Promise<CommitResult> {
    const out = this.dir();
    if (out.isCommitted(unit.id)) return { committed: false, records: 0 };
    const stem = unitFileStem(unit.id);
    const tmp = out.tempPath(stem);
    let keep = false;
    try {
      const { rows } = await writeNdjson(batches, tmp, { gzipLevel: this.gzipLevel, sync: true });
      return await this.commit(unit, stem, tmp, rows);
    } catch (err) {
      keep = err instanceof CommitIncompleteError;
      throw err;
    } finally {
      if (!keep) await rm(tmp, { force: true });
    }
  }

  /** Native path: the unit's JSONL file is checked line by line and copied, not parsed into rows and rewritten. */
  async writeUnitFile(unit: WorkUnit, file: RawFile): Promise<CommitResult> {
    refuseUnlessJsonl('jsonl sink', file);
    const out = this.dir();
    if (out.isCommitted(unit.id)) return { committed: false, records: 0 };
    const stem = unitFileStem(unit.id);
    const tmp = out.tempPath(stem);
    let keep = false;
    try {
      let rows: number;
      try {
        rows = await copyCheckedJsonl(file.path, tmp, this.gzipLevel);
      } catch (err) {
        throw asNativeRefusal('jsonl sink', err);
      }
      return await this.commit(unit, stem, tmp, rows);
    } catch (err) {
      keep = err instanceof CommitIncompleteError;
      throw err;
    } finally {
      if (!keep) await rm(tmp, { force: true });
    }
  }

  async finish(): Promise<void> {
    await this.dir().finish();
  }

  async close(): Promise<void> {
    this.out = undefined;
  }

  private async commit(unit: WorkUnit, stem: string, tmp: string, rows: number): Promise<CommitResult> {
    // A unit without records is recorded (so it is not read again) but gets no empty file.
    const name = `${stem}${this.ext}`;
    const moves = rows > 0 ? [{ from: tmp, to: name }] : [];
    const committed = await this.dir().commit({
      moves,
      check: (m) => !Object.hasOwn(m.units, unit.id),
      apply: (m) => {
        m.units[unit.id] = { records: rows, files: rows > 0 ? [name] : [], committed_at: new Date().toISOString() };
      },
    });
    return { committed, records: committed ? rows : 0 };
  }

  private dir(): OutputDir {
    if (!this.out) throw new Error('jsonl sink used before open()');
    return this.out;
  }
}

export const jsonlSink: ComponentDef<'sink', JsonlSinkConfig, Sink> = {
  kind: 'sink',
  type: 'jsonl',
  description: 'Newline-delimited JSON files (optionally gzip), one per work unit, with a manifest.',
  schema: jsonlSinkSchema,
  create(config: JsonlSinkConfig, deps: ComponentDeps): Sink {
    return new JsonlSink(config, { baseDir: deps.baseDir });
  },
};
