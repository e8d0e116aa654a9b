/**
 * What the two file sinks (jsonl, parquet) are alike as `Sink`s: how they describe and read back their output, name
 * its lock, answer for its committed units and checkpoints, drop it, finish a run (publish what is staged, compact if
 * `compact_after` says so, swap a `replace` generation in) and compact it on demand. What is open between `open()`
 * and `close()` is one object, so nothing can be half open. How each writes its lines and its published files stays
 * in the sink.
 */
import type { z } from 'zod';
import type { ComponentDef, ComponentDeps } from '../../contracts/component.js';
import type {
  CompactSummary,
  FileOutput,
  Logger,
  OutputQuery,
  QueryableOutput,
  Sink,
  SinkContext,
} from '../../core/types.js';
import { SluiceError } from '../../core/errors.js';
import { quoteString } from '../../core/sql.js';
import { displayPath } from '../display-path.js';
import { compactAtFinish } from './compact.js';
import {
  fileSinkLockPath,
  manifestCheckpoints,
  openFileSinkOutput,
  openForCompaction,
  publishedFilesGlob,
  type FileSinkOptions,
  type FileSinkTarget,
} from './file-sink.js';
import type { Manifest } from './manifest.js';
import { outputRoot, type OutputDir } from './output-dir.js';
import { publishedFilesQueryable } from './queryable.js';
import { isS3Url } from './s3-location.js';
import { fileSharedOutput } from './shared-state.js';

/** The part of a file sink's config this base reads. */
export interface FileSinkConfig extends FileSinkTarget {
  compact_after?: number | undefined;
}

/** What a file sink holds from `open()` to `close()`. */
export interface OpenedFileSink {
  ctx: SinkContext;
  out: OutputDir;
}

/** How a file sink's published files are read back: the glob's last part, and the DuckDB table function. */
export interface PublishedFiles {
  pattern: string;
  /** The DuckDB table function over the files, given the quoted glob or a list of quoted files: `read_parquet(${files}, …)`. */
  reader: (quotedFiles: string) => string;
  /** Whether the files say how many rows they hold (Parquet's footers) or must be read through to count them. */
  countIsCheap: boolean;
}

const NOTHING_COMPACTED: CompactSummary = { filesBefore: 0, filesAfter: 0, replaced: 0, written: 0 };

/** A file sink's registry entry: made with the pipeline's directory and shard; its output shared by the shards. */
export function fileSinkDef<C extends FileSinkConfig & { s3?: FileSinkTarget['s3'] }>(def: {
  type: string;
  description: string;
  schema: z.ZodType<C>;
  make: (config: C, options: FileSinkOptions) => Sink;
}): ComponentDef<'sink', C, Sink> {
  return {
    kind: 'sink',
    type: def.type,
    description: def.description,
    schema: def.schema,
    // Shards write into the one `path`, each with its own manifest (output-files/output-dir.ts).
    create: (config: C, deps: ComponentDeps): Sink =>
      def.make(config, { baseDir: deps.baseDir, ...(deps.shard && { shard: deps.shard }) }),
    sharedOutput: (config, baseDir) =>
      fileSharedOutput(config.path, baseDir, def.type as Manifest['format'], config.s3),
  };
}

export abstract class FileSinkBase<C extends FileSinkConfig, O extends OpenedFileSink = OpenedFileSink> {
  private state: O | undefined;
  protected readonly label: string;

  protected constructor(
    protected readonly config: C,
    protected readonly options: FileSinkOptions,
    protected readonly format: Manifest['format'],
    private readonly files: PublishedFiles,
  ) {
    this.label = `${format} sink`;
  }

  describe(): string {
    return `${this.format} ${displayPath(this.config.path, this.options.baseDir)}`;
  }

  /**
   * Every published file under the output; temp and staged files are never named like one. An `s3://` output is not
   * read back here: DuckDB would fetch its httpfs extension from the internet and know neither the store's endpoint
   * nor its credentials — said as such, rather than as whatever DuckDB's attempt fails with.
   */
  outputQuery(limit: number): OutputQuery {
    const glob = this.glob();
    if (isS3Url(glob)) {
      const label = this.label;
      return {
        countIsCheap: false,
        reader: () =>
          Promise.reject(
            new SluiceError(`${label}: an s3:// output is not read back here (--show, sluice schema, the report)`, {
              hint: `list or copy it with the S3 tools you use (\`aws s3 ls ${this.config.path}\`), or read it in DuckDB with its httpfs extension and the bucket's credentials`,
            }),
          ),
      };
    }
    return {
      sql: `SELECT * FROM ${this.files.reader(quoteString(glob))} LIMIT ${limit}`,
      countIsCheap: this.files.countIsCheap,
    };
  }

  /** Checks after the load read the published files. */
  queryable(): Promise<QueryableOutput> {
    return publishedFilesQueryable(
      this.glob(),
      outputRoot(this.options.baseDir ?? '.', this.config.path),
      this.files.reader,
      this.label,
    );
  }

  private glob(): string {
    return publishedFilesGlob(this.options.baseDir ?? '.', this.config.path, this.files.pattern);
  }

  /** What the sink declares as a file output (`SinkCapabilities.files`): its lock and its compaction. */
  protected fileOutput(): FileOutput {
    return {
      lockFile: fileSinkLockPath(this.config, this.options.baseDir ?? '.', this.options.shard),
      compact: (ctx) => this.compact(ctx),
    };
  }

  async committedUnits(): Promise<Set<string>> {
    return this.opened().out.committedUnits();
  }

  async committedCheckpoints(): Promise<Map<string, unknown>> {
    return manifestCheckpoints(this.opened().out.manifest);
  }

  /** `sluice state drop`: the output and its manifest (output-dir.ts `drop`). */
  drop(): Promise<string[]> {
    return this.opened().out.drop();
  }

  /** Publishes whatever is still staged, compacts if `compact_after` says so, then (`replace`) swaps in. */
  async finish(): Promise<void> {
    await this.publish(true);
    const { out, ctx } = this.opened();
    const after = this.config.compact_after;
    if (after !== undefined) await compactAtFinish(() => this.compactWith(out, after, ctx.log), this.label, ctx.log);
    await out.finish();
  }

  /** `sluice compact`: the output's small files rewritten into target-size ones (output-files/compact.ts). */
  async compact(ctx: SinkContext): Promise<CompactSummary> {
    const out = await openForCompaction(this.config, ctx, this.options, this.format);
    if (!out) return { ...NOTHING_COMPACTED };
    return this.compactAlone(out, ctx.log);
  }

  async close(): Promise<void> {
    const s = this.state;
    this.state = undefined;
    if (s) this.release(s);
  }

  /** The output opened for a run; the sink then calls `opened(state)` with what else it holds. */
  protected openOutput(ctx: SinkContext): Promise<OutputDir> {
    return openFileSinkOutput(this.config, ctx, this.options, this.format);
  }

  protected setOpened(state: O): void {
    this.state = state;
  }

  protected opened(): O {
    if (!this.state) throw new Error(`${this.label} used before open()`);
    return this.state;
  }

  /** What `close()` lets go of beyond the output (a DuckDB connection). */
  protected release(_state: O): void {}

  /** Compaction outside a run (`sluice compact`): by default as at the end of a run, from two small files. */
  protected compactAlone(out: OutputDir, log: Logger): Promise<CompactSummary> {
    return this.compactWith(out, 2, log);
  }

  /** Staged units → published files; unless `all`, only files of about the target size. */
  protected abstract publish(all: boolean): Promise<void>;

  /** Compacts `out` where a partition holds at least `minFiles` small files. */
  protected abstract compactWith(out: OutputDir, minFiles: number, log: Logger): Promise<CompactSummary>;
}
