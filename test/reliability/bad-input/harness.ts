/**
 * The bad-input corpus runs the CLI in-process (`runCli` with a recording io): a case is a pipeline file (and the
 * files beside it), a command line and an environment; what it asserts is the two last lines of stderr
 * (`error: …` / `  fix: …`), the exit status, and what the run left on disk.
 *
 * "Nothing committed" is checked on the bytes: no data file appeared, every DuckDB table (and `_sluice_state`) is
 * empty, every manifest lists no unit, no run is marked complete, no dead letter was written.
 */
import { lstatSync, mkdtempSync, readdirSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { expect } from 'vitest';
import { runCli } from '../../../src/cli/cli.js';
import { memoryIo } from '../../cli/memory-io.js';
import { removeAfterFile } from '../../support/file-cleanup.js';

export const KEY = 'bad-input-key-5e2d9a71';

export interface Workspace {
  dir: string;
  /** Writes a file (creating its directory) and returns its absolute path. */
  write(name: string, content: string | Buffer): string;
  path(name: string): string;
  /** Relative paths of every file and symlink under the workspace (directories excluded). */
  files(): Set<string>;
}

export function workspace(): Workspace {
  const dir = mkdtempSync(path.join(tmpdir(), 'sluice-bad-input-'));
  removeAfterFile(dir);
  const ws: Workspace = {
    dir,
    path: (name) => path.join(dir, name),
    write: (name, content) => {
      const file = path.join(dir, name);
      mkdirSync(path.dirname(file), { recursive: true });
      writeFileSync(file, content);
      return file;
    },
    files: () => new Set(walk(dir).map((f) => path.relative(dir, f))),
  };
  return ws;
}

function walk(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name);
    const st = lstatSync(p);
    if (st.isDirectory()) out.push(...walk(p));
    else out.push(p);
  }
  return out;
}

export interface Result {
  code: number;
  stdout: string[];
  stderr: string[];
}

export async function cli(argv: string[], env: Record<string, string | undefined> = {}): Promise<Result> {
  const io = memoryIo(env);
  const code = await runCli(argv, io);
  // Entries may hold several lines (help text, a summary): look at lines.
  const lines = (a: string[]) => a.flatMap((t) => t.split('\n'));
  return { code, stdout: lines(io.stdout), stderr: lines(io.stderr) };
}

/**
 * The command failed with `code`, and stderr ends with the one-line error and the one-line fix (log lines before
 * them may name the failing unit).
 */
export function expectFailure(r: Result, error: RegExp, fix: RegExp, code = 1): void {
  const text = r.stderr.join('\n');
  expect(r.code, text).toBe(code);
  const [e, f] = r.stderr.slice(-2);
  expect(e, text).toMatch(/^error: \S/);
  expect(f, text).toMatch(/^ {2}fix: \S/);
  expect(e!.slice('error: '.length), text).toMatch(error);
  expect(f!.slice('  fix: '.length), text).toMatch(fix);
  expect(r.stderr.filter((l) => l.startsWith('error: ')).at(-1)).toBe(e);
  // The key passed in the environment is never printed.
  expect(text + r.stdout.join('\n')).not.toContain(KEY);
}

const DATA_FILE = /\.(jsonl|jsonl\.gz|parquet|ndjson|json)$/;

/** What the files under the workspace hold, as far as "committed" goes. */
export interface Inventory {
  /** Data files that were not there before (outputs, not state). */
  newDataFiles: string[];
  /** `<file>:<table>` → rows, for every table of every DuckDB file (`_sluice_state` included). */
  duckdbRows: Record<string, number>;
  /** Manifest path → units listed. */
  manifestUnits: Record<string, number>;
  /** State files whose run is marked complete. */
  completeRuns: string[];
  /** Dead-letter lines written. */
  deadLetters: number;
}

export async function inventory(ws: Workspace, before: Set<string>): Promise<Inventory> {
  const inv: Inventory = { newDataFiles: [], duckdbRows: {}, manifestUnits: {}, completeRuns: [], deadLetters: 0 };
  for (const rel of ws.files()) {
    const full = ws.path(rel);
    const base = path.basename(rel);
    if (base === '_sluice_manifest.json') {
      const m = JSON.parse(readFileSync(full, 'utf8')) as { units: Record<string, unknown> };
      inv.manifestUnits[rel] = Object.keys(m.units).length;
    } else if (base === 'state.json' && rel.includes('.sluice')) {
      if (/"run:complete":\s*true/.test(readFileSync(full, 'utf8'))) inv.completeRuns.push(rel);
    } else if (base.endsWith('dead-letters.jsonl')) {
      inv.deadLetters += readFileSync(full, 'utf8').split('\n').filter(Boolean).length;
    } else if (base.endsWith('.duckdb')) {
      Object.assign(inv.duckdbRows, await duckdbRows(full, rel));
    } else if (DATA_FILE.test(base) && !before.has(rel) && !isState(rel)) {
      inv.newDataFiles.push(rel);
    }
  }
  return inv;
}

function isState(rel: string): boolean {
  return rel.split(path.sep).some((seg) => seg === '.sluice' || seg === '.sluice-tmp' || seg.endsWith('.sluice-tmp'));
}

/** Row counts of every table in a DuckDB file (the instance the sinks used, from DuckDB's process-wide cache). */
export async function duckdbRows(file: string, label = file): Promise<Record<string, number>> {
  const instance = await DuckDBInstance.fromCache(file);
  const conn = await instance.connect();
  try {
    const tables = (
      await conn.runAndReadAll(`SELECT schema_name, table_name FROM duckdb_tables() WHERE NOT temporary`)
    ).getRows() as [string, string][];
    const out: Record<string, number> = {};
    for (const [schema, table] of tables) {
      const r = await conn.runAndReadAll(`SELECT count(*) FROM "${schema}"."${table}"`);
      out[`${label}:${schema}.${table}`] = Number(r.getRows()[0]![0]);
    }
    return out;
  } finally {
    conn.closeSync();
  }
}

/** A run that failed (or was refused) committed nothing: see the file comment. */
export async function expectNothingCommitted(ws: Workspace, before: Set<string>): Promise<void> {
  const inv = await inventory(ws, before);
  expect(inv.newDataFiles, 'output files').toEqual([]);
  expect(
    Object.entries(inv.duckdbRows).filter(([, n]) => n > 0),
    'DuckDB rows',
  ).toEqual([]);
  expect(
    Object.entries(inv.manifestUnits).filter(([, n]) => n > 0),
    'manifest units',
  ).toEqual([]);
  expect(inv.completeRuns, 'runs marked complete').toEqual([]);
  expect(inv.deadLetters, 'dead letters').toBe(0);
}

/** A problem of the pipeline file itself: reported before anything is created. */
export function expectNothingWritten(ws: Workspace, before: Set<string>): void {
  expect([...ws.files()].filter((f) => !before.has(f))).toEqual([]);
}
