/**
 * Local files (JSONL, JSON, CSV; gzip detected by its magic bytes). One work unit per file, identified by path,
 * size and modification time, so a rerun skips files already loaded and a changed file is loaded again.
 */
import { createReadStream } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { SluiceError } from '../core/errors.js';
import type { Batch, RawDecodeOptions, RawFile, Source, SourceContext, WorkUnit } from '../core/types.js';
import type { ComponentDef, ComponentDeps } from '../core/component.js';
import { decode } from '../decode/index.js';
import { countBytes } from './bytes.js';
import { rawDecodeOptions } from './raw-decode.js';

export const fileSchema = z
  .object({
    type: z.literal('file'),
    paths: z
      .array(z.string().min(1))
      .min(1)
      .describe('Files or directories (all files inside, sorted), relative to the pipeline file.'),
    format: z.enum(['jsonl', 'json', 'csv']).describe('How the files are written (.gz or not is detected).'),
    items_path: z
      .string()
      .optional()
      .describe(
        'For `json`: dotted path of the array to read inside each document (e.g. `reviews`); default: the top-level array.',
      ),
    concurrency: z.number().int().min(1).max(64).default(2).describe('Files read at once.'),
  })
  .strict();
export type FileConfig = z.infer<typeof fileSchema>;

class FileSource implements Source {
  readonly concurrency: number;
  /** What every file's bytes are: the same for `read()` and `rawFile()`. */
  private readonly decodeOptions: RawDecodeOptions;

  constructor(
    private readonly cfg: FileConfig,
    private readonly deps: ComponentDeps,
  ) {
    this.concurrency = cfg.concurrency;
    this.decodeOptions = rawDecodeOptions(cfg.format, cfg.items_path);
  }

  /** The file itself: nothing to download. A sink that cannot read `items_path` natively refuses it. */
  async rawFile(unit: WorkUnit): Promise<RawFile> {
    return { path: unit.params.path as string, decode: this.decodeOptions, temporary: false };
  }

  async plan(ctx: SourceContext): Promise<WorkUnit[]> {
    const units: WorkUnit[] = [];
    for (const p of this.cfg.paths) {
      const abs = path.resolve(this.deps.baseDir, p);
      const st = await stat(abs).catch(() => {
        throw new SluiceError(`source file ${abs} does not exist`, {
          hint: 'check source.paths (relative to the pipeline file)',
        });
      });
      const files = st.isDirectory()
        ? (await readdir(abs))
            .filter((f) => !f.startsWith('.'))
            .sort()
            .map((f) => path.join(abs, f))
        : [abs];
      for (const f of files) {
        const fst = await stat(f);
        if (!fst.isFile()) continue;
        units.push({ id: `file:${f}:${fst.size}:${Math.floor(fst.mtimeMs)}`, params: { path: f } });
      }
    }
    ctx.report?.('note', `${units.length} file(s)`);
    return units;
  }

  async *read(unit: WorkUnit, ctx: SourceContext): AsyncIterable<Batch> {
    yield* decode(countBytes(createReadStream(unit.params.path as string, { highWaterMark: 1 << 16 }), ctx.counters), {
      ...this.decodeOptions,
      unit: unit.id,
      deadLetter: ctx.deadLetter,
    });
  }
}

export const fileSource: ComponentDef<'source', FileConfig, Source> = {
  kind: 'source',
  type: 'file',
  description: 'Local JSONL, JSON or CSV files (gzip detected); one work unit per file.',
  schema: fileSchema,
  create: (cfg, deps) => new FileSource(cfg, deps),
};
