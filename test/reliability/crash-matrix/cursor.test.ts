/**
 * Crash matrix cells for the cursor (incremental loads): an incremental file pipeline into DuckDB and JSONL, its
 * second night killed with SIGKILL between a unit's data commit and what follows it. Right after the kill, each
 * sink's cursor names exactly the files whose rows it holds (committed: published or staged) — never one more (the cursor ahead of the data would
 * skip a file forever) and never one less; one rerun then gives every row exactly once, as a clean run does, and
 * the run after that loads nothing.
 *
 * The killed run is the real CLI (dist/) in a child process; the other commands run the CLI in this process
 * (sluiceInProcess). The DuckDB sink keeps a database open for the process that opened it, so this process only
 * opens a cell's database once its child is dead. The first night runs once; each cell starts from a copy of its
 * outcome (a copy: the first night's file stays open here). CI only (SLUICE_CRASH_MATRIX=full).
 */
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { CursorState } from '../../../src/cli/commands/state.js';
import type { FailpointName } from '../../../src/core/failpoints.js';
import { query, sluice, sluiceInProcess, type Obj } from '../../e2e/harness.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const NIGHT1 = ['f1', 'f2', 'f3'];
const NIGHT2 = ['f4', 'f5', 'f6', 'f7'];
const ROWS_PER_FILE = 3;

const PIPELINE = [
  'version: 1',
  'name: cursor_crash',
  'service: { base_url: emulator, api_key: emulator-key }',
  // One file at a time: the failpoint's hit count names the unit it strikes.
  'source: { type: file, paths: [in], format: jsonl, concurrency: 1 }',
  'sinks:',
  '  - { type: duckdb, path: out.duckdb, table: t }',
  // A one-byte target: each unit is published on its own right after it is staged, so the data a reader sees is
  // the cursor's and a `files:*` failpoint's hit count names a unit.
  '  - { type: jsonl, path: out/jsonl, target_file_mb: 0.000001 }',
  '',
].join('\n');

function addFiles(dir: string, names: string[]): void {
  for (const f of names) {
    const n = Number(f.slice(1));
    const rows = Array.from({ length: ROWS_PER_FILE }, (_, i) => ({ id: n * 100 + i, file: f }));
    writeFileSync(path.join(dir, 'in', `${f}.jsonl`), rows.map((r) => JSON.stringify(r) + '\n').join(''));
  }
}

/** A command on the cell's pipeline, in this process. */
async function cli(dir: string, ...args: string[]): Promise<{ code: number | null; out: string[]; err: string }> {
  const r = await sluiceInProcess([args[0]!, path.join(dir, 'p.yaml'), ...args.slice(1)]);
  return { code: r.code, out: r.stdout.split('\n').filter((l) => l !== ''), err: r.stderr };
}

function tempDir(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'sluice-cursor-crash-'));
  dirs.push(dir);
  return dir;
}

/** The first night, complete: the cells' starting point. */
async function firstNight(): Promise<string> {
  const dir = tempDir();
  mkdirSync(path.join(dir, 'in'));
  writeFileSync(path.join(dir, 'p.yaml'), PIPELINE);
  addFiles(dir, NIGHT1);
  const night1 = await cli(dir, 'run', '--no-progress', '--quiet');
  expect(night1.code, night1.err).toBe(0);
  return dir;
}

/** Each sink's rows as `file` → ids, DuckDB first (the order of `sinks:`). */
async function sinkRows(dir: string): Promise<Map<string, number[]>[]> {
  const duck = await query('SELECT id::INTEGER AS id, file FROM w.t', { duckdb: path.join(dir, 'out.duckdb') });
  const out = path.join(dir, 'out/jsonl');
  // What the JSONL sink holds: its published files, and the units its manifest committed as staged (committed, not
  // yet published: a reader sees them once a run publishes them, and the cursor rightly counts them).
  const manifest = JSON.parse(readFileSync(path.join(out, '_sluice_manifest.json'), 'utf8')) as {
    units: Record<string, { staged?: { file: string } }>;
  };
  const staged = Object.values(manifest.units).flatMap((u) => (u.staged ? [u.staged.file] : []));
  const published = readdirSync(out).filter((f) => f.endsWith('.jsonl'));
  const jsonl = [...published, ...staged].flatMap((f) =>
    readFileSync(path.join(out, f), 'utf8')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as Obj),
  );
  return [duck, jsonl].map((rows) => {
    const byFile = new Map<string, number[]>();
    for (const r of rows) byFile.set(r.file as string, [...(byFile.get(r.file as string) ?? []), r.id as number]);
    for (const ids of byFile.values()) ids.sort((a, b) => a - b);
    return byFile;
  });
}

const fileOf = (checkpoint: unknown): string => path.basename((checkpoint as { path: string }).path, '.jsonl');
const complete = (f: string): number[] => Array.from({ length: ROWS_PER_FILE }, (_, i) => Number(f.slice(1)) * 100 + i);

/** The cell's checks right after the kill: each sink's cursor is exactly the files it holds, each complete. */
async function cursorMatchesData(dir: string): Promise<{ cursorFiles: string[][]; effective: string[] }> {
  // `sluice state` opens the sinks, which settles a commit the kill left recorded but not renamed (JSONL).
  const state = await cli(dir, 'state', '--json');
  expect(state.code, state.err).toBe(0);
  const s = JSON.parse(state.out[0]!) as CursorState;
  const rows = await sinkRows(dir);
  const cursorFiles = s.sinks.map((sink) => sink.checkpoints.map((c) => fileOf(c.checkpoint)).sort());
  cursorFiles.forEach((files, i) => {
    expect([...rows[i]!.keys()].sort()).toEqual(files);
    for (const f of files) expect(rows[i]!.get(f)).toEqual(complete(f));
  });
  return { cursorFiles, effective: s.effective.map((c) => fileOf(c.checkpoint)).sort() };
}

async function cell(
  night1: string,
  failpoint: `${FailpointName}=${number}`,
): Promise<{ cursorFiles: string[][]; effective: string[] }> {
  const dir = tempDir();
  cpSync(night1, dir, { recursive: true });
  addFiles(dir, NIGHT2);
  const killed = await sluice(['run', path.join(dir, 'p.yaml'), '--no-progress'], {
    env: { SLUICE_FAILPOINTS: failpoint },
  });
  expect(killed.signal, killed.stderr).toBe('SIGKILL');
  expect(killed.stderr).toContain(failpoint.split('=')[0]);

  const afterKill = await cursorMatchesData(dir);

  const rerun = await cli(dir, 'run', '--no-progress', '--quiet');
  expect(rerun.code, rerun.err).toBe(0);
  const all = [...NIGHT1, ...NIGHT2];
  const clean = new Map(all.map((f) => [f, complete(f)]));
  for (const rows of await sinkRows(dir)) expect(rows).toEqual(clean);

  const after = await cli(dir, 'run', '--no-progress', '--log-format', 'json');
  expect(after.code, after.err).toBe(0);
  expect(JSON.parse(after.out.at(-1)!)).toMatchObject({ units: { total: 0 }, records: 0 });
  return afterKill;
}

describe('crash matrix: the cursor of an incremental file load', () => {
  // CI (SLUICE_CRASH_MATRIX=full): in `npm test` the conformance soak kills incremental runs at every sink's commit
  // failpoints in turn and checks each cursor against its data (test/sinks/conformance/soak.test.ts).
  it.runIf(process.env.SLUICE_CRASH_MATRIX === 'full')(
    'kill -9 after a unit’s data commit: the cursor never passes the data, and a rerun equals a clean run',
    { timeout: 600_000 },
    async () => {
      const night1 = await firstNight();
      const [afterData, afterManifest, afterCommit] = await Promise.all([
        // DuckDB: the unit's rows are in its transaction, its checkpoint row and COMMIT not yet.
        cell(night1, 'duckdb:after-data=2'),
        // JSONL: the manifest recorded the unit (rows and checkpoint), its file is not renamed into place yet.
        cell(night1, 'files:after-manifest=2'),
        // Both sinks committed the unit; the engine did nothing after it yet.
        cell(night1, 'engine:after-commit=2'),
      ]);
      // The kills fell where they claim: DuckDB without the night's second file, JSONL with it, both with it.
      expect(afterData.cursorFiles[0]).toEqual(['f1', 'f2', 'f3', 'f4']);
      expect(afterManifest.cursorFiles[1]).toContain('f5');
      expect(afterCommit.effective).toEqual(['f1', 'f2', 'f3', 'f4', 'f5']);
    },
  );
});
