/**
 * Local files (JSONL, JSON, CSV; gzip detected by its magic bytes). One work unit per file, identified by path,
 * size and modification time, so a changed file is a new unit.
 *
 * Incremental (the default): each unit's checkpoint is the file's fingerprint (path, size, mtime, SHA-256), committed
 * by the sinks with its rows; the next run plans only files no sink set loaded before or that changed since. Size
 * and mtime equal to the last load mean unchanged (nothing is read); otherwise the content hash decides, so a file
 * that was only touched or copied over with the same bytes is not loaded again.
 */
import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { lstat, open, readdir, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { SluiceError } from '../core/errors.js';
import type { Batch, RawDecodeOptions, RawFile, Source, SourceContext, UnitEnd, WorkUnit } from '../core/types.js';
import { fileReferences, type ComponentDef, type ComponentDeps } from '../contracts/component.js';
import { decode } from '../decode/index.js';
import { countBytes, localFileBounds } from './bytes.js';
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
    follow_symlinks: z
      .boolean()
      .default(false)
      .describe(
        'Read symbolic links in a listed directory that point outside it. Default false: they are skipped with a warning (a link dropped into an inbox folder must not make sluice read, and dead-letter, any file the user can read).',
      ),
    incremental: z
      .boolean()
      .default(true)
      .describe(
        'Load only files not loaded before or changed since (size, mtime, content hash), as the sinks committed them. `false`: every run loads every file.',
      ),
  })
  .strict();
export type FileConfig = z.infer<typeof fileSchema>;

/** What a loaded file's unit commits as its checkpoint: the file as it was read. */
export interface FileCheckpoint {
  /** Relative to the pipeline file's directory: a project moved or checked out elsewhere keeps its cursor. */
  path: string;
  size: number;
  mtimeMs: number;
  sha256: string;
}

function isFileCheckpoint(v: unknown): v is FileCheckpoint {
  const c = v as Partial<FileCheckpoint> | null;
  return (
    typeof c === 'object' &&
    c !== null &&
    typeof c.path === 'string' &&
    typeof c.size === 'number' &&
    typeof c.mtimeMs === 'number' &&
    typeof c.sha256 === 'string'
  );
}

/** The last committed fingerprint of each path (checkpoints list older runs first: the newest wins). */
function lastLoaded(checkpoints: ReadonlyMap<string, unknown> | undefined): Map<string, FileCheckpoint> {
  const byPath = new Map<string, FileCheckpoint>();
  for (const c of checkpoints?.values() ?? []) if (isFileCheckpoint(c)) byPath.set(c.path, c);
  return byPath;
}

/** Into one buffer, reused: a stream's new buffer per chunk kept the collector busy beside the units' work. */
async function sha256Of(file: string): Promise<string> {
  const hash = createHash('sha256');
  const fh = await open(file, 'r');
  try {
    const buf = Buffer.allocUnsafe(1 << 20);
    let n: number;
    while ((n = (await fh.read(buf, 0, buf.length, null)).bytesRead) > 0) hash.update(buf.subarray(0, n));
  } finally {
    await fh.close();
  }
  return hash.digest('hex');
}

class FileSource implements Source {
  readonly concurrency: number;
  /** What every file's bytes are: the same for `read()` and `rawFile()`. */
  private readonly decodeOptions: RawDecodeOptions;
  readonly incremental: boolean;

  constructor(
    private readonly cfg: FileConfig,
    private readonly deps: ComponentDeps,
  ) {
    this.concurrency = cfg.concurrency;
    this.decodeOptions = rawDecodeOptions(cfg.format, cfg.items_path);
    this.incremental = cfg.incremental;
  }

  /** The file itself: nothing to download. A sink that cannot read `items_path` natively refuses it. */
  async rawFile(unit: WorkUnit, ctx: SourceContext): Promise<RawFile> {
    const file = unit.params.path as string;
    // The sink opens it by name: a file replaced by a link since it was planned is not handed over.
    if ((await lstat(file)).isSymbolicLink()) throw replacedByLink(file);
    return {
      path: file,
      decode: { ...this.decodeOptions, bounds: localFileBounds(ctx) },
      temporary: false,
      ...(await checkpointOf(unit)),
    };
  }

  async plan(ctx: SourceContext): Promise<WorkUnit[]> {
    const units: WorkUnit[] = [];
    const loaded = lastLoaded(this.cfg.incremental ? ctx.checkpoints : undefined);
    let unchanged = 0;
    for (const p of this.cfg.paths) {
      const abs = path.resolve(this.deps.baseDir, p);
      const st = await stat(abs).catch(() => {
        throw new SluiceError(`source file ${abs} does not exist`, {
          hint: 'check source.paths (relative to the pipeline file)',
        });
      });
      // A file named in `paths` is read wherever it is: the user named it.
      const files = st.isDirectory()
        ? await this.listDirectory(abs, ctx)
        : [{ listed: abs, read: await realpath(abs) }];
      for (const { listed: f, read } of files) {
        const fst = await stat(read);
        if (!fst.isFile()) continue;
        const size = fst.size;
        const mtimeMs = Math.floor(fst.mtimeMs);
        const id = `file:${f}:${size}:${mtimeMs}`;
        if (!this.cfg.incremental) {
          units.push({ id, params: { path: read } });
          continue;
        }
        const rel = path.relative(this.deps.baseDir, f);
        const last = loaded.get(rel);
        if (last !== undefined && last.size === size && last.mtimeMs === mtimeMs) {
          unchanged++;
          continue;
        }
        // The content decides only against a load of the same size; otherwise the file is hashed when its unit
        // starts (`checkpointOf`), beside the other units' work rather than before any of it.
        let sha256: string | undefined;
        if (last !== undefined && last.size === size) {
          sha256 = await sha256Of(read);
          if (last.sha256 === sha256) {
            unchanged++;
            continue;
          }
        }
        const fingerprint: PlannedFingerprint = { path: rel, size, mtimeMs, ...(sha256 !== undefined && { sha256 }) };
        units.push({ id, params: { path: read, fingerprint } });
      }
    }
    ctx.report?.('note', `${units.length} file(s)`);
    if (unchanged > 0) {
      const text = `${unchanged} file(s) loaded before and unchanged since: skipped`;
      if (ctx.report) ctx.report('note', text);
      else ctx.log.info(text);
    }
    return units;
  }

  /**
   * The files of a listed directory, sorted, hidden ones left out, each with the path it is read through: a
   * symbolic link is read through its target (opened without following links again), and one that leads outside
   * the directory is skipped unless `follow_symlinks` says otherwise.
   */
  private async listDirectory(dir: string, ctx: SourceContext): Promise<{ listed: string; read: string }[]> {
    const root = await realpath(dir);
    const out: { listed: string; read: string }[] = [];
    for (const name of (await readdir(dir)).filter((f) => !f.startsWith('.')).sort()) {
      const listed = path.join(dir, name);
      if (!(await lstat(listed)).isSymbolicLink()) {
        out.push({ listed, read: listed });
        continue;
      }
      const target = await realpath(listed).catch(() => undefined);
      if (target === undefined) continue; // a dangling link: no file to read
      const inside = target.startsWith(root + path.sep);
      if (!inside && !this.cfg.follow_symlinks) {
        const text = `skipped ${listed}: a symbolic link to ${target}, outside ${dir} (set source.follow_symlinks: true to read such links)`;
        if (ctx.report) ctx.report('note', text);
        else ctx.log.warn(text);
        continue;
      }
      out.push({ listed, read: target });
    }
    return out;
  }

  async *read(unit: WorkUnit, ctx: SourceContext): AsyncGenerator<Batch, UnitEnd> {
    // Without following a link: the name was checked when the unit was planned, and what it names now is read.
    const file = unit.params.path as string;
    const end = await checkpointOf(unit);
    const handle = await open(file, READ_NO_FOLLOW).catch((err: unknown) => {
      throw (err as NodeJS.ErrnoException).code === 'ELOOP' ? replacedByLink(file) : err;
    });
    const bytes = handle.createReadStream({ highWaterMark: 1 << 16 });
    yield* decode(countBytes(bytes, ctx.counters), {
      ...this.decodeOptions,
      unit: unit.id,
      deadLetter: ctx.deadLetter,
      bounds: localFileBounds(ctx),
    });
    return end;
  }
}

/** A fingerprint as planned: its hash is taken when the unit starts unless the plan needed it. */
type PlannedFingerprint = Omit<FileCheckpoint, 'sha256'> & { sha256?: string };

/**
 * An incremental file's checkpoint: its fingerprint, size and mtime as planned, the content hashed before a byte of
 * it is loaded. A file rewritten after that is committed with a fingerprint of what it was before, so the next run
 * sees it changed and loads it again — never skips it.
 */
async function checkpointOf(unit: WorkUnit): Promise<UnitEnd> {
  const planned = unit.params.fingerprint as PlannedFingerprint | undefined;
  if (planned === undefined) return {};
  const fingerprint: FileCheckpoint = {
    ...planned,
    sha256: planned.sha256 ?? (await sha256Of(unit.params.path as string)),
  };
  return { checkpoint: fingerprint };
}

/** Opens a file for reading, failing (ELOOP) when its name is now a symbolic link; plain read where there is none. */
const READ_NO_FOLLOW = constants.O_NOFOLLOW === undefined ? 'r' : constants.O_RDONLY | constants.O_NOFOLLOW;

function replacedByLink(file: string): SluiceError {
  return new SluiceError(`source file ${file} was replaced by a symbolic link since the run planned it`, {
    hint: 'run again: the link is then judged like any other (see source.follow_symlinks)',
  });
}

export const fileSource: ComponentDef<'source', FileConfig, Source> = {
  kind: 'source',
  type: 'file',
  description: 'Local JSONL, JSON or CSV files (gzip detected); one work unit per file.',
  schema: fileSchema,
  create: (cfg, deps) => new FileSource(cfg, deps),
  offline: true,
  files: (cfg) => fileReferences(['paths'], cfg.paths, 'file or directory', 'an input file or a directory of them'),
};
