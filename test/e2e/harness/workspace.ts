/**
 * Where an end-to-end test's pipelines and outputs live: a temporary copy of pipelines/ per workspace, removed after
 * each test file, and the outputs read back with DuckDB.
 */
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { removeAfterFile } from '../../support/file-cleanup.js';

export const ROOT = path.resolve(import.meta.dirname, '../../..');
export const API_KEY = 'e2e-key-7f3a9c21';

export type Obj = Record<string, any>;

export interface Workspace {
  dir: string;
  /** The copy of pipelines/ (outputs of the examples land in `<dir>/out`, their `../out`). */
  pipelines: string;
  out: string;
  /** Path of a pipeline file in the copy. */
  pipeline(name: string): string;
  /** Writes a pipeline (or any file) into the copy of pipelines/ and returns its path. */
  write(name: string, text: string): string;
}

/**
 * A temporary copy of pipelines/, so the examples' relative outputs and state stay out of the repository; removed
 * after the test file (test/support/file-cleanup.ts) unless SLUICE_E2E_KEEP=1 keeps it for a look at what a run wrote.
 */
export function workspace(): Workspace {
  const dir = mkdtempSync(path.join(tmpdir(), 'sluice-e2e-'));
  removeAfterFile(dir, 'SLUICE_E2E_KEEP');
  const pipelines = path.join(dir, 'pipelines');
  // Without the state of runs made in the repository (`.sluice/`): a copied checkpoint would make a run resume.
  cpSync(path.join(ROOT, 'pipelines'), pipelines, {
    recursive: true,
    filter: (src) => !path.basename(src).startsWith('.sluice'),
  });
  return {
    dir,
    pipelines,
    out: path.join(dir, 'out'),
    pipeline: (name) => path.join(pipelines, name),
    write: (name, text) => {
      const file = path.join(pipelines, name);
      writeFileSync(file, text);
      return file;
    },
  };
}

/** An example pipeline's text with some lines replaced, for variants of the examples. */
export function variant(ws: Workspace, example: string, replace: [string | RegExp, string][]): string {
  let text = readFileSync(ws.pipeline(example), 'utf8');
  for (const [from, to] of replace) {
    const next = text.replace(from, to);
    if (next === text) throw new Error(`variant of ${example}: ${String(from)} not found`);
    text = next;
  }
  return text;
}

/** Rows of a query over outputs: DuckDB files are attached read-only as `w`; the instance is closed afterwards. */
export async function query(sql: string, opts: { duckdb?: string } = {}): Promise<Obj[]> {
  const instance = await DuckDBInstance.create(':memory:');
  const conn = await instance.connect();
  try {
    await conn.run(`SET TimeZone = 'UTC'`);
    if (opts.duckdb) await conn.run(`ATTACH '${opts.duckdb.replace(/'/g, "''")}' AS w (READ_ONLY)`);
    const reader = await conn.runAndReadAll(sql);
    return reader.getRowObjectsJS().map((row) => {
      const out: Obj = {};
      for (const [k, v] of Object.entries(row)) out[k] = typeof v === 'bigint' ? Number(v) : v;
      return out;
    });
  } finally {
    conn.closeSync();
    instance.closeSync();
  }
}
