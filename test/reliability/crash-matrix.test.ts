/**
 * The crash matrix (bench/crash-matrix.ts): `sluice run` killed with SIGKILL at every failpoint of the commit paths
 * and from outside mid-download — snapshot into DuckDB (append, merge, replace), Parquet and JSONL (append,
 * replace), and a SERP crawl into DuckDB. Every cell must die where planned, show a reader nothing partial or
 * duplicated right after the kill, and after one rerun of the same command end with the clean run's output, the paid
 * filter job started once and no crash leftovers. The table is printed; `npx tsx bench/crash-matrix.ts` prints the
 * same and writes out/crash-matrix.md.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CELLS, cellPassed, formatMatrix, runCrashMatrix } from '../../bench/crash-matrix.js';
import { leftovers, outputDigest, visibleAfterKill, type Output } from '../../bench/lib/crash-outputs.js';
import { FAILPOINTS } from '../../src/core/failpoints.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A JSONL sink's output directory as a crash could leave it: `files` by name, the manifest's units. */
function jsonlOutput(
  files: Record<string, string>,
  units: Record<string, { records: number; files: string[] }>,
): Output {
  const dir = mkdtempSync(path.join(tmpdir(), 'sluice-crash-checks-'));
  dirs.push(dir);
  const out = path.join(dir, 'out/jsonl');
  mkdirSync(path.join(out, '.sluice-tmp'), { recursive: true });
  for (const [name, text] of Object.entries(files)) writeFileSync(path.join(out, name), text);
  const manifest = { version: 1, pipeline: 'p', format: 'jsonl', updated_at: '', units };
  writeFileSync(path.join(out, '_sluice_manifest.json'), JSON.stringify(manifest));
  return { dir, pipeline: 'snapshot', sink: 'jsonl', name: 'p' };
}

const row = (id: number): string => `${JSON.stringify({ id, name: `company ${id}` })}\n`;

describe('the checks the crash matrix relies on', () => {
  it('see a cut-short file, a committed file short of rows, a record twice and a record no clean run has', async () => {
    const clean = await outputDigest(jsonlOutput({ 'a.jsonl': row(1) + row(2) + row(3) + row(4) }, {}), true);
    expect(clean).toMatchObject({ rows: 4, keys: 4 });

    const cut = jsonlOutput(
      { 'a.jsonl': row(1) + row(2), 'b.jsonl': row(3) + row(4).slice(0, 9) },
      {
        u1: { records: 2, files: ['a.jsonl'] },
      },
    );
    expect((await visibleAfterKill(cut, clean)).problems).toEqual(['b.jsonl: does not end with a newline (cut short)']);

    const wrong = jsonlOutput(
      { 'a.jsonl': row(1) + row(2), 'b.jsonl': row(3), 'c.jsonl': row(2) + row(9) },
      { u1: { records: 2, files: ['a.jsonl'] }, u2: { records: 2, files: ['b.jsonl'] } },
    );
    const seen = await visibleAfterKill(wrong, clean);
    expect(seen.rows).toBe(5);
    expect(seen.uncommittedFiles).toBe(1);
    expect(seen.problems).toEqual([
      'b.jsonl: 1 row(s), the manifest commits 2',
      '1 visible file(s) that the manifest does not commit',
      '1 visible record(s) that a clean run does not have',
      '1 record(s) visible twice',
      "5 rows visible, more than a clean run's 4",
    ]);
    writeFileSync(path.join(wrong.dir, 'out/jsonl/.sluice-tmp/x.tmp'), 'partial');
    expect(leftovers(wrong)).toEqual(['out/jsonl/.sluice-tmp/x.tmp', 'out/jsonl/c.jsonl']);
  });

  it('count committed files that are not in place yet without calling them a problem', async () => {
    const clean = await outputDigest(jsonlOutput({ 'a.jsonl': row(1) + row(2) }, {}), true);
    const pending = jsonlOutput(
      { 'a.jsonl': row(1) },
      { u1: { records: 1, files: ['a.jsonl'] }, u2: { records: 1, files: ['b.jsonl'] } },
    );
    const seen = await visibleAfterKill(pending, clean);
    expect(seen).toEqual({ rows: 1, uncommittedFiles: 0, pendingFiles: 1, problems: [] });
  });
});

describe('crash matrix', () => {
  it(
    'every kill -9 leaves nothing partial visible, and one rerun gives the clean output, paid once',
    { timeout: 420_000 },
    async () => {
      const result = await runCrashMatrix();
      console.log(formatMatrix(result));

      const bad = result.cells
        .filter((c) => !cellPassed(c))
        .map(
          (c) =>
            `${c.label}: died ${c.died ? 'yes' : `no (${c.endedAs})`}; after the kill ${JSON.stringify(c.visibleProblems)}; ` +
            `${c.reruns} rerun(s), ${c.rerunSucceeded ? '' : 'none succeeded, '}output ${JSON.stringify(c.digest)} vs ` +
            `clean ${JSON.stringify(c.clean)}; paid ${JSON.stringify(c.paid)}; leftovers ${JSON.stringify(c.leftovers)}; ` +
            c.failures.join(' / '),
        );
      expect(bad).toEqual([]);

      // The matrix did what it claims: every failpoint was struck somewhere, units were committed before some kills
      // and not before others, and a job started by the killed run was found by its rerun rather than paid again.
      const struck = new Set(
        result.cells.flatMap((c) => ('failpoint' in c.kill ? [c.kill.failpoint.split('=')[0]] : [])),
      );
      expect(Object.keys(FAILPOINTS).filter((f) => !struck.has(f))).toEqual([]);
      expect(result.cells.filter((c) => 'external' in c.kill).length).toBeGreaterThanOrEqual(4);
      const partial = result.cells.filter((c) => !c.sink.endsWith('_replace') && (c.visibleRows ?? 0) > 0);
      expect(partial.some((c) => (c.visibleRows ?? 0) < c.clean.rows)).toBe(true);
      expect(result.cells.some((c) => c.visibleRows === undefined || c.visibleRows === 0)).toBe(true);
      expect(result.cells.some((c) => c.recoveredJob)).toBe(true);
      expect(result.cells).toHaveLength(CELLS.length);
    },
  );
});
