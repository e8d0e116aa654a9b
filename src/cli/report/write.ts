/**
 * The report page on disk: readable by its owner alone (0600), as the run history it is drawn from is
 * (state/run-history.ts): the page quotes what runs.jsonl keeps — failure causes, warnings that name records' values,
 * dead letters' reasons — and a report written where others can read it would hand them what the history does not.
 */
import { open, rename, rm } from 'node:fs/promises';
import { PRIVATE_FILE } from '../../core/private-files.js';

/**
 * Writes `html` to `out` whole, then renames it into place: a browser or a web server never reads half a page, and
 * a page written before with wider permissions is replaced, not rewritten in place with them.
 */
export async function writeReportFile(out: string, html: string): Promise<void> {
  const tmp = `${out}.tmp-${process.pid}`;
  // Left by a run of the same pid that crashed: `wx` creates the file anew, with the mode asked for.
  await rm(tmp, { force: true });
  const fh = await open(tmp, 'wx', PRIVATE_FILE);
  try {
    await fh.writeFile(html);
  } finally {
    await fh.close();
  }
  await rename(tmp, out);
}
