/**
 * The crash matrix's view of a sink's output (bench/crash-matrix.ts): what a reader sees — a DuckDB table, or every
 * data file that a `**` glob of the output directory lists, read with `read_parquet` / `read_json` — its digest,
 * what is wrong with it right after a kill, and the crash leftovers a successful rerun must have cleared.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import { digestOf, sameDigest, sql, withDuckDB, type Digest } from './matrix-common.js';

export { sameDigest, type Digest } from './matrix-common.js';

export type SinkKind =
  'duckdb' | 'duckdb_merge' | 'duckdb_replace' | 'parquet' | 'parquet_replace' | 'jsonl' | 'jsonl_replace';
export type PipelineKind = 'snapshot' | 'serp';

/** One pipeline's output: where it is, which sink wrote it, and its state directory's pipeline name. */
export interface Output {
  dir: string;
  pipeline: PipelineKind;
  sink: SinkKind;
  name: string;
}

/** Keys that identify a record of each pipeline's output. */
const KEYS: Record<PipelineKind, string> = { snapshot: 'id', serp: "concat_ws('|', query, page, rank)" };
/** Columns that differ between two correct runs (fetch times, the service's per-request ids). */
const VOLATILE = ['fetched_at', 'request_id'];

export function isReplace(s: SinkKind): boolean {
  return s.endsWith('_replace');
}

function kind(s: SinkKind): 'duckdb' | 'parquet' | 'jsonl' {
  return s.startsWith('duckdb') ? 'duckdb' : s.startsWith('parquet') ? 'parquet' : 'jsonl';
}

/** The sink's `path`, relative to the pipeline file in `dir`. */
export function sinkPath(s: SinkKind): string {
  return { duckdb: 'out/warehouse.duckdb', parquet: 'out/parquet', jsonl: 'out/jsonl' }[kind(s)];
}

/** Rows, distinct keys and a checksum (and the row hashes, with `rows`) of the output as a reader sees it. */
export async function outputDigest(o: Output, rows = false): Promise<Digest> {
  return withDuckDB(async (conn) => {
    const relation = await relationOf(conn, o);
    if (relation === undefined) return { rows: 0, keys: 0, checksum: 'empty' };
    return digestOf(conn, relation, { key: KEYS[o.pipeline], volatile: VOLATILE, rowHashes: rows });
  });
}

export interface Visible {
  /** Rows a reader saw; undefined when there was nothing to read. */
  rows: number | undefined;
  /** Data files a glob lists that the manifest does not commit: a problem (files appear only once committed). */
  uncommittedFiles: number;
  /** Files the manifest commits that are not in place yet (the kill came between the commit and the renames). */
  pendingFiles: number;
  /**
   * Partial or unreadable files, committed files holding other row counts than the manifest says, records a clean
   * run does not have, records seen twice, more rows than a clean run, rows without a checkpoint.
   */
  problems: string[];
}

/**
 * What a reader sees right after a kill, and what is wrong with it. `clean` must carry its row hashes. `replace`: the
 * live output must be exactly a complete run's (`clean`): the old generation, or the whole new one.
 */
export async function visibleAfterKill(o: Output, clean: Digest): Promise<Visible> {
  return withDuckDB(async (conn) => {
    const v: Visible = { rows: undefined, uncommittedFiles: 0, pendingFiles: 0, problems: [] };
    if (kind(o.sink) !== 'duckdb') {
      const files = await globbed(conn, o);
      for (const f of files) {
        const problem = kind(o.sink) === 'parquet' ? await parquetProblem(conn, f) : jsonlProblem(f);
        if (problem) v.problems.push(`${path.basename(f)}: ${problem}`);
      }
      if (v.problems.length > 0) return v;
      v.problems.push(...(await miscounted(conn, o)));
      const committed = manifestFiles(o);
      const root = path.join(o.dir, sinkPath(o.sink));
      v.uncommittedFiles = files.filter((f) => !committed.has(path.relative(root, f))).length;
      v.pendingFiles = [...committed].filter((f) => !existsSync(path.join(root, f))).length;
      if (v.uncommittedFiles > 0)
        v.problems.push(`${v.uncommittedFiles} visible file(s) that the manifest does not commit`);
    }
    let relation: string | undefined;
    try {
      relation = await relationOf(conn, o);
    } catch (err) {
      v.problems.push(`the output cannot be read: ${firstLine(err)}`);
      return v;
    }
    if (relation === undefined) {
      if (isReplace(o.sink)) v.problems.push('the output of the earlier run is gone');
      return v;
    }
    const d = await digestOf(conn, relation, {
      key: KEYS[o.pipeline],
      volatile: VOLATILE,
      rowHashes: !isReplace(o.sink),
    });
    v.rows = d.rows;
    if (isReplace(o.sink)) {
      if (!sameDigest(d, clean)) v.problems.push(`the live output is not a complete run's: ${JSON.stringify(d)}`);
      return v;
    }
    if (!clean.rowHashes) throw new Error('visibleAfterKill needs the clean digest with its row hashes');
    const foreign = [...d.rowHashes!].filter((h) => !clean.rowHashes!.has(h)).length;
    if (foreign > 0) v.problems.push(`${foreign} visible record(s) that a clean run does not have`);
    if (d.keys !== d.rows) v.problems.push(`${d.rows - d.keys} record(s) visible twice`);
    if (d.rows > clean.rows) v.problems.push(`${d.rows} rows visible, more than a clean run's ${clean.rows}`);
    if (o.sink === 'duckdb') {
      // Every row in the table is accounted for by a committed unit's checkpoint, and nothing else.
      const r = await conn.runAndReadAll(
        `SELECT coalesce(sum(records), 0)::BIGINT AS n FROM w._sluice_state WHERE table_name = 't'`,
      );
      const checkpointed = Number(r.getRowObjectsJS()[0]!.n);
      if (checkpointed !== d.rows) v.problems.push(`${d.rows} rows in the table, ${checkpointed} checkpointed`);
    }
    return v;
  });
}

/**
 * Crash leftovers still there after a successful rerun: temp, staging, marker and spare generation files, state
 * temp files, and data files a reader lists that the manifest does not commit.
 */
export function leftovers(o: Output): string[] {
  const found: string[] = [];
  const rel = (p: string): string => path.relative(o.dir, p);
  const contents = (d: string): string[] => (existsSync(d) ? readdirSync(d).map((n) => path.join(d, n)) : []);
  const stateDir = path.join(o.dir, '.sluice', o.name);
  // The state directory's durable files; a lock (`run.lock`) left after the rerun finished is a leftover.
  const kept = ['state.json', 'dead-letters.jsonl', 'runs.jsonl', 'emulator.json', 'tmp'];
  for (const f of contents(stateDir)) if (!kept.includes(path.basename(f))) found.push(rel(f));
  found.push(...contents(path.join(stateDir, 'tmp')).map(rel));
  const out = path.join(o.dir, sinkPath(o.sink));
  if (kind(o.sink) === 'duckdb') return [...found, ...contents(`${out}.sluice-tmp`).map(rel)];
  found.push(...contents(path.join(out, '.sluice-tmp')).map(rel));
  found.push(...contents(path.join(out, '.sluice-staged')).map(rel));
  if (isReplace(o.sink)) {
    const generations = contents(path.join(path.dirname(out), `.${path.basename(out)}.sluice-generations`));
    if (generations.length !== 1) found.push(...generations.map(rel));
  }
  const committed = manifestFiles(o);
  const ext = kind(o.sink) === 'parquet' ? '.parquet' : '.jsonl';
  for (const f of walk(out)) if (f.includes(ext) && !committed.has(path.relative(out, f))) found.push(rel(f));
  return found;
}

/** The data files the live manifest commits (relative to the output path); none before the first commit. */
function manifestFiles(o: Output): Set<string> {
  const file = path.join(o.dir, sinkPath(o.sink), '_sluice_manifest.json');
  if (!existsSync(file)) return new Set();
  const m = JSON.parse(readFileSync(file, 'utf8')) as { units: Record<string, { files: string[] }> };
  return new Set(Object.values(m.units).flatMap((u) => u.files));
}

/**
 * Committed files whose row counts differ from what the manifest records for their units (units published together
 * share their files): a file cut short at a line boundary still parses, but holds fewer rows than committed.
 */
async function miscounted(conn: DuckDBConnection, o: Output): Promise<string[]> {
  const root = path.join(o.dir, sinkPath(o.sink));
  const file = path.join(root, '_sluice_manifest.json');
  if (!existsSync(file)) return [];
  const m = JSON.parse(readFileSync(file, 'utf8')) as { units: Record<string, { records: number; files: string[] }> };
  const groups = new Map<string, { files: string[]; records: number }>();
  for (const u of Object.values(m.units)) {
    if (u.files.length === 0) continue;
    const g = groups.get(JSON.stringify(u.files)) ?? { files: u.files, records: 0 };
    g.records += u.records;
    groups.set(JSON.stringify(u.files), g);
  }
  const problems: string[] = [];
  for (const g of groups.values()) {
    // Committed files not in place yet (killed between the commit and the renames) are counted by `pendingFiles`.
    if (g.files.some((f) => !existsSync(path.join(root, f)))) continue;
    const list = `[${g.files.map((f) => sql(path.join(root, f))).join(', ')}]`;
    const read =
      kind(o.sink) === 'parquet'
        ? `read_parquet(${list}, union_by_name = true)`
        : `read_json(${list}, format = 'newline_delimited', union_by_name = true)`;
    const n = Number((await conn.runAndReadAll(`SELECT count(*) AS n FROM ${read}`)).getRowObjectsJS()[0]!.n);
    if (n !== g.records) problems.push(`${g.files.join(', ')}: ${n} row(s), the manifest commits ${g.records}`);
  }
  return problems;
}

/** What a reader of the output sees: the DuckDB table, or every data file a glob lists; undefined: nothing yet. */
async function relationOf(conn: DuckDBConnection, o: Output): Promise<string | undefined> {
  const out = path.join(o.dir, sinkPath(o.sink));
  if (kind(o.sink) === 'duckdb') {
    if (!existsSync(out)) return undefined;
    await conn.run(`ATTACH ${sql(out)} AS w (READ_ONLY)`);
    const t = await conn.runAndReadAll(
      `SELECT 1 FROM duckdb_tables() WHERE database_name = 'w' AND schema_name = 'main' AND table_name = 't'`,
    );
    return t.currentRowCount > 0 ? 'w.t' : undefined;
  }
  const files = await globbed(conn, o);
  if (files.length === 0) return undefined;
  const list = `[${files.map(sql).join(', ')}]`;
  return kind(o.sink) === 'parquet'
    ? `read_parquet(${list}, union_by_name = true)`
    : `read_json(${list}, format = 'newline_delimited', union_by_name = true)`;
}

/** The files DuckDB's own glob lists under the output path, as a reader's query would. */
async function globbed(conn: DuckDBConnection, o: Output): Promise<string[]> {
  const out = path.join(o.dir, sinkPath(o.sink));
  if (!existsSync(out)) return [];
  const pattern = kind(o.sink) === 'parquet' ? `${out}/**/*.parquet` : `${out}/**/*.jsonl*`;
  const r = await conn.runAndReadAll(`SELECT file FROM glob(${sql(pattern)}) ORDER BY file`);
  return r.getRowObjectsJS().map((x) => String(x.file));
}

async function parquetProblem(conn: DuckDBConnection, file: string): Promise<string | undefined> {
  try {
    await conn.runAndReadAll(`SELECT count(*) FROM read_parquet(${sql(file)})`);
    return undefined;
  } catch (err) {
    return `unreadable: ${firstLine(err)}`;
  }
}

/** A JSONL file is whole when it ends with a newline and every line is a JSON object. */
function jsonlProblem(file: string): string | undefined {
  const text = readFileSync(file, 'utf8');
  if (text.length > 0 && !text.endsWith('\n')) return 'does not end with a newline (cut short)';
  const lines = text.split('\n').slice(0, -1);
  for (let i = 0; i < lines.length; i++) {
    try {
      const v: unknown = JSON.parse(lines[i]!);
      if (typeof v !== 'object' || v === null || Array.isArray(v)) return `line ${i + 1} is not a JSON object`;
    } catch {
      return `line ${i + 1} is not JSON`;
    }
  }
  return undefined;
}

/** Files under `dir` (following a symlinked root), skipping the sinks' hidden directories. */
function walk(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    if (name.startsWith('.')) continue;
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) out.push(...walk(p));
    else out.push(p);
  }
  return out;
}

function firstLine(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).split('\n')[0]!;
}
