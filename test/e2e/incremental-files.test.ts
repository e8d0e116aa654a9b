/**
 * Incremental file loads over simulated nights, through the CLI in-process (a file source needs no service): each
 * night loads only the files that are new or changed, the table equals a full load of the same files, and
 * `sluice state` shows what the next run starts from.
 */
import { createHash } from 'node:crypto';
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/cli.js';
import { memoryIo } from '../cli/memory-io.js';
import { query, type Obj } from './harness.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const env = { SLUICE_API_KEY: 'emulator-key' };

function pipelineText(name: string, db: string, extra = ''): string {
  return [
    'version: 1',
    `name: ${name}`,
    'service: { base_url: emulator, api_key: "${SLUICE_API_KEY}" }',
    `source: { type: file, paths: [in], format: jsonl${extra} }`,
    `sink: { type: duckdb, path: ${db}, table: orders, write: merge, primary_key: [id] }`,
    '',
  ].join('\n');
}

const jsonl = (rows: Obj[]): string => rows.map((r) => JSON.stringify(r) + '\n').join('');
const rowsOf = (ids: number[], status = 'new'): Obj[] => ids.map((id) => ({ id, status }));

/** A file written with a given mtime (seconds), so "changed" never depends on the clock's resolution. */
function put(dir: string, name: string, rows: Obj[], mtime: number): void {
  const file = path.join(dir, 'in', name);
  writeFileSync(file, jsonl(rows));
  utimesSync(file, mtime, mtime);
}

async function cli(...args: string[]): Promise<{ code: number; out: string[]; err: string[] }> {
  const io = memoryIo(env);
  const code = await runCli(args, io);
  return { code, out: io.stdout, err: io.stderr };
}

/** Runs the pipeline; returns the summary (units, records). */
async function run(file: string, ...extra: string[]): Promise<Obj> {
  const r = await cli('run', file, '--no-progress', '--log-format', 'json', ...extra);
  expect(r.code, r.err.join('\n')).toBe(0);
  return JSON.parse(r.out.at(-1)!) as Obj;
}

/**
 * For a night that planned files it should not have: each file's fingerprint as a plan takes it now (size, mtime,
 * SHA-256: src/sources/file.ts) against every fingerprint committed for its path before that night (`sluice state
 * --json` taken then), in the order the cursor lists them.
 */
function fingerprints(dir: string, stateBefore: { out: string[] }): string {
  const { effective } = JSON.parse(stateBefore.out[0]!) as { effective: { run: string; checkpoint: Obj }[] };
  const lines = ['fingerprints: planned (the file now) vs committed before this run (cursor order, oldest run first)'];
  for (const name of readdirSync(path.join(dir, 'in')).sort()) {
    const rel = path.join('in', name);
    const st = statSync(path.join(dir, rel));
    const sha256 = createHash('sha256')
      .update(readFileSync(path.join(dir, rel)))
      .digest('hex');
    lines.push(`${rel}: planned ${JSON.stringify({ size: st.size, mtimeMs: Math.floor(st.mtimeMs), sha256 })}`);
    for (const c of effective.filter((e) => e.checkpoint.path === rel))
      lines.push(`  committed by run ${c.run}: ${JSON.stringify(c.checkpoint)}`);
  }
  return lines.join('\n');
}

const table = (db: string): Promise<Obj[]> =>
  query('SELECT id::INTEGER AS id, status FROM w.orders ORDER BY id', { duckdb: db });

describe('incremental file loads over nights', () => {
  it(
    'loads only new and changed files, equals a full load each night, and shows its cursor',
    { timeout: 180_000 },
    async () => {
      const dir = mkdtempSync(path.join(tmpdir(), 'sluice-incremental-files-'));
      dirs.push(dir);
      const inDir = path.join(dir, 'in');
      mkdirSync(inDir);
      const nightly = path.join(dir, 'nightly.yaml');
      writeFileSync(nightly, pipelineText('nightly_files', 'nightly.duckdb'));
      const nightlyDb = path.join(dir, 'nightly.duckdb');

      /** The same files loaded from scratch into a database of their own. */
      const fullLoad = async (): Promise<Obj[]> => {
        const file = path.join(dir, 'full.yaml');
        writeFileSync(file, pipelineText('full', 'full.duckdb', ', incremental: false'));
        await run(file);
        return table(path.join(dir, 'full.duckdb'));
      };

      // Night 1: three files.
      put(dir, 'a.jsonl', rowsOf([1, 2]), 1_700_000_000);
      put(dir, 'b.jsonl', rowsOf([3, 4]), 1_700_000_000);
      put(dir, 'c.jsonl', rowsOf([5]), 1_700_000_000);
      let s = await run(nightly);
      expect(s.units).toMatchObject({ total: 3, done: 3 });
      expect(s.records).toBe(5);
      expect(await table(nightlyDb)).toEqual([1, 2, 3, 4, 5].map((id) => ({ id, status: 'new' })));

      // Night 2: one file added, one changed in place (same size: only its content hash tells), one only touched.
      put(dir, 'd.jsonl', rowsOf([6, 7]), 1_700_086_400);
      put(dir, 'b.jsonl', [...rowsOf([3], 'old'), ...rowsOf([4], 'old')], 1_700_086_400);
      put(dir, 'c.jsonl', rowsOf([5]), 1_700_086_400);
      s = await run(nightly);
      expect(s.units).toMatchObject({ total: 2, done: 2 });
      expect(s.records).toBe(4);
      const night2 = await table(nightlyDb);
      expect(night2).toHaveLength(7);
      expect(night2.find((r) => r.id === 3)).toEqual({ id: 3, status: 'old' });
      expect(night2).toEqual(await fullLoad());

      // Night 3: nothing new.
      const cursorBefore = await cli('state', nightly, '--json');
      expect(cursorBefore.code, cursorBefore.err.join('\n')).toBe(0);
      s = await run(nightly);
      const planned = (s.units as { total: number }).total;
      expect(s.units, planned === 0 ? '' : fingerprints(dir, cursorBefore)).toMatchObject({ total: 0, done: 0 });
      expect(s.records).toBe(0);
      expect(await table(nightlyDb)).toEqual(night2);

      // `sluice state`: the effective cursor first, then the sink's; the units with --units.
      const state = await cli('state', nightly);
      expect(state.code, state.err.join('\n')).toBe(0);
      const text = state.out.join('\n');
      expect(text).toContain('nightly_files: file source');
      expect(text).toMatch(/^next run skips: 5 unit\(s\) committed by every sink$/m);
      expect(text).toMatch(/^sinks:\n {2}1: duckdb .*: 5 unit\(s\)$/m);
      expect(text).not.toContain('"path"');
      const units = (await cli('state', nightly, '--units')).out.join('\n');
      expect(units).toContain(`"path":"${path.join('in', 'd.jsonl')}"`);
      const json = await cli('state', nightly, '--json');
      const parsed = JSON.parse(json.out[0]!) as { effective: { unit: string; checkpoint: Obj }[] };
      expect(parsed.effective.map((c) => path.basename(c.checkpoint.path as string)).sort()).toEqual([
        'a.jsonl',
        'b.jsonl',
        'b.jsonl',
        'c.jsonl',
        'd.jsonl',
      ]);
      expect(parsed.effective.at(-1)!.checkpoint).toMatchObject({ size: expect.any(Number), sha256: /^[0-9a-f]{64}$/ });

      // --reset-cursor loads every file again; merge keeps the table as it was.
      s = await run(nightly, '--reset-cursor');
      expect(s.units).toMatchObject({ total: 4, done: 4 });
      expect(await table(nightlyDb)).toEqual(night2);
    },
  );

  it('`sluice state` says a non-incremental source keeps no cursor, and exits 2 on a bad file', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'sluice-incremental-files-'));
    dirs.push(dir);
    mkdirSync(path.join(dir, 'in'));
    const file = path.join(dir, 'p.yaml');
    writeFileSync(file, pipelineText('plain', 'plain.duckdb', ', incremental: false'));
    const plain = await cli('state', file);
    expect(plain.code).toBe(0);
    expect(plain.out.join('\n')).toContain('keeps no cursor');

    const missing = await cli('state', path.join(dir, 'nope.yaml'));
    expect(missing.code).toBe(2);
    expect(missing.err.join('\n')).toMatch(/nope\.yaml/);
  });
});
