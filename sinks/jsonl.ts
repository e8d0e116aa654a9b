/**
 * `jsonl` sink: one newline-delimited JSON file per work unit, recorded in the directory's `_sluice_manifest.json`
 * and then renamed into place (see `common/output-dir.ts` for the commit protocol and `replace` generations).
 */
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import type {
  Batch,
  CommitResult,
  ComponentDef,
  ComponentDeps,
  RawFile,
  Sink,
  SinkContext,
  WorkUnit,
} from '../src/core/types.js';
import { copyCheckedJsonl } from './common/jsonl-files.js';
import { writeNdjson } from './common/ndjson-writer.js';
import { CommitIncompleteError, OutputDir, type FileSinkHooks } from './common/output-dir.js';
import { unitFileStem } from './common/unit-file-name.js';

/**
 * gzip level 1 compresses ~3× faster than the default 6 for ~25% larger files (200k records: +3 CPU-s over plain
 * text at level 1, +9.5 at level 6; 151 vs 121 MB; `bench/sinks.ts`): at level 6 gzip, not JSON, limits a load.
 */
export const DEFAULT_GZIP_LEVEL = 1;

export const jsonlSinkSchema = z
  .object({
    type: z.literal('jsonl'),
    path: z
      .string()
      .min(1)
      .describe(
        'Output directory, relative to the pipeline file; created if missing. Each work unit becomes one file, `<unit id>.jsonl` (or `.jsonl.gz`), listed with its record count in `_sluice_manifest.json`.',
      ),
    compress: z
      .boolean()
      .optional()
      .describe('gzip the files (`.jsonl.gz`). Default: true when `path` ends in `.gz`, else false.'),
    gzip_level: z
      .number()
      .int()
      .min(1)
      .max(9)
      .default(DEFAULT_GZIP_LEVEL)
      .describe(
        'gzip level when compressing: 1 is fastest (the default; ~3× faster than 6, files ~25% larger), 9 smallest.',
      ),
    write: z
      .enum(['append', 'replace'])
      .default('append')
      .describe(
        '`append`: every run adds its files. `replace`: the run writes a new generation and `path` (then a symlink) switches to it atomically when the run finishes; readers see the old files or all of the new ones.',
      ),
  })
  .strict();

export type JsonlSinkConfig = z.infer<typeof jsonlSinkSchema>;

export class JsonlSink implements Sink {
  private out: OutputDir | undefined;
  private readonly gzipLevel: number | undefined;
  private readonly ext: string;

  constructor(
    private readonly config: JsonlSinkConfig,
    private readonly hooks: FileSinkHooks = {},
  ) {
    const compress = config.compress ?? config.path.endsWith('.gz');
    this.gzipLevel = compress ? config.gzip_level : undefined;
    this.ext = compress ? '.jsonl.gz' : '.jsonl';
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
    if (file.format !== 'jsonl') throw new Error(`the jsonl sink copies only JSONL files natively, not ${file.format}`);
    const out = this.dir();
    if (out.isCommitted(unit.id)) return { committed: false, records: 0 };
    const stem = unitFileStem(unit.id);
    const tmp = out.tempPath(stem);
    let keep = false;
    try {
      const rows = await copyCheckedJsonl(file.path, tmp, this.gzipLevel);
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
  create(config: JsonlSinkConfig, _deps: ComponentDeps): Sink {
    return new JsonlSink(config);
  },
};
