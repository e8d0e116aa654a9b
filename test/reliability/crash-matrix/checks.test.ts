/**
 * The crash matrix (bench/crash-matrix.ts) without running it: the checks it applies to an output right after a kill
 * and after the rerun see what they must, and the cells `npm test` runs (TEST_CELLS, in the halves of the other test
 * files here) still kill the paid job and the crawl, while every failpoint is struck by the full matrix or the sink
 * conformance suite. The full matrix: `npx tsx bench/crash-matrix.ts`.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CELLS, TEST_CELLS, cellLabel } from '../../../bench/crash-matrix.js';
import { leftovers, outputDigest, visibleAfterKill, type Output } from '../../../bench/lib/crash-outputs.js';
import { FAILPOINTS } from '../../../src/core/failpoints.js';
import { COMPACT_FAILPOINTS } from '../../engine/compact-failpoints.js';
import { ALL_TARGETS as TARGETS } from '../../sinks/conformance/targets.js';
import { HALVES, MATRIX } from './run-cells.js';

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

describe('the cells npm test runs', () => {
  it('with the sink conformance suite, strike every failpoint; in npm test, the paid job and the crawl', () => {
    // Every failpoint is struck by the full matrix (CI) or, in a sink's commit path, by the conformance suite's
    // targets (test/sinks/conformance/targets.ts), which strike each of theirs in CI and the first in npm test.
    const struck = new Set([
      ...CELLS.flatMap((c) => ('failpoint' in c.kill ? [c.kill.failpoint.split('=')[0]] : [])),
      ...COMPACT_FAILPOINTS,
      ...TARGETS.flatMap((t) =>
        Object.values(t.failpoints)
          .flat()
          .map((f) => f.split('=')[0]),
      ),
    ]);
    expect(Object.keys(FAILPOINTS).filter((f) => !struck.has(f))).toEqual([]);
    const kills = TEST_CELLS.map((c) => ('external' in c.kill ? 'external' : c.kill.failpoint.split('=')[0]));
    expect(kills).toEqual(
      expect.arrayContaining(['snapshot:job-started', 'snapshot:job-checkpointed', 'crawl:successor-recorded']),
    );
    expect(kills).toContain('external');
  });

  it('are cells of the full matrix, each in exactly one of the halves the test files run', () => {
    const full = new Set(CELLS.map(cellLabel));
    expect(TEST_CELLS.map(cellLabel).filter((l) => !full.has(l))).toEqual([]);
    const halved = HALVES.flat().map(cellLabel).sort();
    expect(halved).toEqual(MATRIX.map(cellLabel).sort());
  });
});
