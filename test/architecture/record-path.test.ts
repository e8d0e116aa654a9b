/**
 * ARCHITECTURE.md's record paths are measured, not remembered (record-path.ts): a snapshot record from `sluice run`
 * to a committed DuckDB row, and a SERP page into Postgres. The tables in ARCHITECTURE.md must list exactly the files
 * measured, with their lines (within a tenth, so an edit elsewhere in a file does not fail it). When the code moves,
 * `SLUICE_WRITE_RECORD_PATH=1 npx vitest run test/architecture/record-path.test.ts` writes the tables anew, keeping
 * each file's description.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runPipeline } from '../../src/operations/run.js';
import { loadPipeline } from '../../src/pipeline/load.js';
import type { Registry } from '../../src/pipeline/registry.js';
import { hasPostgres, startPostgres, type PostgresServer } from '../support/postgres-server.js';
import { measureRecordPath, type PathFile } from './record-path.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
/** The command's own file: it hands the loaded pipeline to the run and waits (the units' stack does not reach it). */
const COMMAND = 'src/cli/commands/run.ts';

const dir = mkdtempSync(path.join(tmpdir(), 'sluice-record-path-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function run(yaml: string, registry: Registry, afterCommit: () => Promise<void>): Promise<void> {
  const file = path.join(dir, `p${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(file, yaml);
  await runPipeline(
    await loadPipeline(file, {}),
    { fresh: true, logFormat: 'text', quiet: true, progress: false },
    { registry, afterCommit, log: { debug() {}, info() {}, warn() {}, error() {} } },
  );
}

const ARCHITECTURE = path.join(ROOT, 'ARCHITECTURE.md');
const WRITE = process.env.SLUICE_WRITE_RECORD_PATH === '1';

interface Row extends PathFile {
  what: string;
}

/** The table ARCHITECTURE.md keeps under `heading`: its files, their lines, what each does to the record. */
function documented(heading: string): { rows: Row[]; start: number; end: number } {
  const text = readFileSync(ARCHITECTURE, 'utf8');
  const at = text.indexOf(`${heading}\n`);
  if (at < 0) return { rows: [], start: -1, end: -1 };
  const tableStart = text.indexOf('\n|', at) + 1;
  let end = tableStart;
  const rows: Row[] = [];
  for (const line of text.slice(tableStart).split('\n')) {
    if (!line.startsWith('|')) break;
    end += line.length + 1;
    const m = /^\| \d+ \| `([^`]+)` \| (\d+) \| (.*) \|$/.exec(line);
    if (m) rows.push({ file: m[1]!, lines: Number(m[2]), what: m[3]! });
  }
  // The count line under the table.
  const after = text.slice(end).match(/^\d+ files, \d+ lines\.\n/);
  return { rows, start: tableStart, end: end + (after?.[0].length ?? 0) };
}

function table(files: PathFile[], known: readonly Row[]): string {
  const total = files.reduce((n, f) => n + f.lines, 0);
  const what = (f: string): string => known.find((r) => r.file === f)?.what ?? '…';
  return [
    '| # | file | lines | what it does to the record |',
    '|---|---|---|---|',
    ...files.map((f, i) => `| ${i + 1} | \`${f.file}\` | ${f.lines} | ${what(f.file)} |`),
    `${files.length} files, ${total} lines.`,
    '',
  ].join('\n');
}

function lines(file: string): number {
  return readFileSync(path.join(ROOT, file), 'utf8').split('\n').length - 1;
}

/** Within a tenth (or 10 lines): an edit elsewhere in a file is not a moved path. */
const close = (a: number, b: number): boolean => Math.abs(a - b) <= Math.max(10, Math.round(b / 10));

function expectDocumented(heading: string, measured: PathFile[]): void {
  const files = [{ file: COMMAND, lines: lines(COMMAND) }, ...measured.filter((f) => f.file !== COMMAND)];
  const doc = documented(heading);
  if (WRITE && doc.start >= 0) {
    const text = readFileSync(ARCHITECTURE, 'utf8');
    writeFileSync(ARCHITECTURE, text.slice(0, doc.start) + table(files, doc.rows) + text.slice(doc.end));
    return;
  }
  const why = `ARCHITECTURE.md "${heading}" is not the path measured; it should read (SLUICE_WRITE_RECORD_PATH=1 writes it):\n${table(files, doc.rows)}`;
  expect(
    doc.rows.map((r) => r.file),
    why,
  ).toEqual(files.map((f) => f.file));
  for (const [i, f] of files.entries())
    expect(
      close(doc.rows[i]!.lines, f.lines),
      `${f.file}: ${doc.rows[i]!.lines} lines documented, ${f.lines} now\n${why}`,
    ).toBe(true);
}

describe('a record’s path, measured', () => {
  it('a snapshot record from `sluice run` to a committed DuckDB row', async () => {
    const measured = await measureRecordPath({
      source: 'snapshot',
      run: (registry, afterCommit) =>
        run(
          `version: 1
name: record_path_snapshot
service: { base_url: emulator, api_key: emulator-key, emulator: { seed: 1, size: 5000, time_scale: 2000 } }
source:
  type: snapshot
  dataset_id: gd_l1vikfnt1wgvvqz95w
  filter: { name: followers, operator: '>=', value: 100 }
  records_limit: 2000
  download: { format: jsonl, compress: true, batch_size: 1000 }
  concurrency: 1
  poll: { interval_ms: 20 }
transforms:
  - { type: normalize, preset: company_profile }
sink: { type: duckdb, path: out.duckdb, table: company_profiles, write: merge, primary_key: [company_id] }
`,
          registry,
          afterCommit,
        ),
    });
    expectDocumented('### A snapshot record into DuckDB', measured);
  }, 120_000);

  describe.skipIf(!hasPostgres())('into Postgres', () => {
    let server: PostgresServer;
    beforeAll(async () => {
      server = await startPostgres();
      await server.createDatabase('record_path');
    }, 60_000);
    afterAll(() => server?.stop());

    it('a SERP page from `sluice run` to committed Postgres rows', async () => {
      const measured = await measureRecordPath({
        source: 'serp',
        run: (registry, afterCommit) =>
          run(
            `version: 1
name: record_path_serp
service: { base_url: emulator, api_key: emulator-key }
source:
  type: serp
  zone: serp_zone
  engine: https://www.google.com
  queries: ['ramen berlin']
  max_pages: 2
  concurrency: 1
transforms:
  - { type: normalize, preset: serp_organic }
sink: { type: postgres, url: '${server.socketUrl('record_path')}', table: serp_organic, write: merge, primary_key: [query, link] }
`,
            registry,
            afterCommit,
          ),
      });
      expectDocumented('### A SERP page into Postgres', measured);
    }, 120_000);
  });
});
