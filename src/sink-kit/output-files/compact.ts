/**
 * Compaction of a file sink's output (`sluice compact`, or `compact_after:` at the end of a run): the small
 * published files of each partition directory are rewritten into files of about the target size, under the commit
 * protocol of output-dir.ts, one commit per partition:
 *   1. the new files are written to the temp area (`compact:written`),
 *   2. one manifest swap replaces the old files by the new ones in every unit that named them (the units stay
 *      committed, with their checkpoints): the commit point,
 *   3. the new files are moved (S3: copied) into place, then the old ones removed (`compact:after-remove`); the
 *      commit's marker lists both, so a kill -9 anywhere after 2 is completed by the next open of the output, and
 *      one before 2 leaves the old files, the temp files going as any crash's leftovers.
 * A reader that follows the manifest sees the old files or the new ones, never a part. A reader that lists the
 * directory sees each new file whole (renamed or copied in); between step 3's first rename and last removal it
 * also sees old files beside the new ones holding the same rows: while step 3 runs, or after a kill in it until the
 * next command that opens the output completes the commit (docs/guides/compaction.md has the table).
 */
import { rm } from 'node:fs/promises';
import path from 'node:path';
import type { CompactSummary, Logger } from '../../core/types.js';
import { failpoint } from '../../core/failpoints.js';
import { newPublishId } from './file-sink.js';
import { CommitIncompleteError, type Move, type OutputDir } from './output-dir.js';

/** A file of at least this share of the target is left as it is: joining it to others would gain little. */
const SMALL_SHARE = 0.5;

export interface CompactOptions {
  targetBytes: number;
  /** A partition is compacted when it holds at least this many small files (at least 2). */
  minFiles: number;
  /**
   * Writes the rows of `inputs` (local files, in the order given) as new files of about `targetBytes` into the
   * directory `dir` (which it creates), named `part-<publishId>-<n>` with a `.tmp` extension. Returns the names
   * of the files written that hold rows.
   */
  rewrite(inputs: string[], dir: string, publishId: string): Promise<string[]>;
  /** The published files' extension (`.parquet`, `.jsonl.gz`). */
  ext: string;
  /** For messages: `parquet sink`. */
  label: string;
  log: Logger;
}

/** One partition's small files to compact, packed in name order. */
interface Group {
  dir: string;
  files: string[];
}

/** The groups of small files worth rewriting, per partition directory. */
export function planCompaction(sizes: ReadonlyMap<string, number>, targetBytes: number, minFiles: number): Group[] {
  const byDir = new Map<string, string[]>();
  for (const [rel, size] of sizes) {
    if (size >= targetBytes * SMALL_SHARE) continue;
    const dir = path.posix.dirname(rel);
    const list = byDir.get(dir);
    if (list) list.push(rel);
    else byDir.set(dir, [rel]);
  }
  const groups: Group[] = [];
  for (const [dir, files] of [...byDir].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    if (files.length < Math.max(2, minFiles)) continue;
    let current: string[] = [];
    let bytes = 0;
    for (const rel of files.sort()) {
      current.push(rel);
      bytes += sizes.get(rel)!;
      if (bytes >= targetBytes) {
        groups.push({ dir, files: current });
        current = [];
        bytes = 0;
      }
    }
    groups.push({ dir, files: current });
  }
  return groups.filter((g) => g.files.length >= 2);
}

/** Rewrites the output's small files (see the header); returns what it did. */
export async function compactOutput(out: OutputDir, o: CompactOptions): Promise<CompactSummary> {
  const sizes = await out.publishedSizes();
  const groups = planCompaction(sizes, o.targetBytes, o.minFiles);
  const summary: CompactSummary = { filesBefore: sizes.size, filesAfter: sizes.size, replaced: 0, written: 0 };
  for (const group of groups) {
    const written = await compactGroup(out, group, o);
    summary.replaced += group.files.length;
    summary.written += written;
    summary.filesAfter += written - group.files.length;
  }
  if (groups.length > 0)
    o.log.info(
      `${o.label}: compacted ${summary.replaced} small file(s) into ${summary.written} in ${new Set(groups.map((g) => g.dir)).size} partition(s): ${summary.filesBefore} → ${summary.filesAfter} file(s)`,
    );
  return summary;
}

async function compactGroup(out: OutputDir, group: Group, o: CompactOptions): Promise<number> {
  const publishId = `${newPublishId(out)}-c`;
  const tmpDir = out.tempPath(`compact-${publishId}`, 'dir');
  const inputs: string[] = [];
  let keep = false;
  try {
    for (const rel of group.files) inputs.push(await out.localFile(rel));
    const names = await o.rewrite(inputs, tmpDir, publishId);
    const prefix = group.dir === '.' ? '' : `${group.dir}/`;
    const moves: Move[] = names.map((name) => ({
      from: path.join(tmpDir, name),
      to: `${prefix}${name.replace(/\.tmp$/, o.ext)}`,
    }));
    if (moves.length === 0) return 0;
    failpoint('compact:written');
    const old = new Set(group.files);
    const added = moves.map((m) => m.to);
    const committed = await out.commit({
      moves,
      // Another commit took one of the files out meanwhile (none should: the output's lock is held).
      check: (m) => {
        const named = new Set(Object.values(m.units).flatMap((u) => u.files));
        return group.files.every((f) => named.has(f));
      },
      apply: (m) => {
        for (const u of Object.values(m.units)) {
          if (!u.files.some((f) => old.has(f))) continue;
          u.files = [...u.files.filter((f) => !old.has(f)), ...added];
        }
      },
      removes: group.files,
    });
    return committed ? moves.length : 0;
  } catch (err) {
    // Recorded but not all in place: the temp files belong to the output now (the next open completes it).
    keep = err instanceof CommitIncompleteError;
    throw err;
  } finally {
    // On S3 the inputs are downloads into the temp area.
    const downloads = inputs.filter((f) => f.startsWith(`${out.tmpDir}${path.sep}`));
    await Promise.all(downloads.map((f) => rm(f, { force: true })));
    if (!keep) await rm(tmpDir, { recursive: true, force: true });
  }
}

/**
 * `compact_after:` at the end of a run: the run's units are committed whatever compaction does, so a compaction
 * that fails is a warning (the small files stay for the next run or `sluice compact`), unless its commit is recorded
 * and not complete, which the run must report.
 */
export async function compactAtFinish(compact: () => Promise<unknown>, label: string, log: Logger): Promise<void> {
  try {
    await compact();
  } catch (err) {
    if (err instanceof CommitIncompleteError) throw err;
    log.warn(
      `${label}: compaction failed, the small files stay as they are (\`sluice compact\` retries): ${String(err)}`,
    );
  }
}
