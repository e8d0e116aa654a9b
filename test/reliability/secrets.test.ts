/**
 * A canary API key passed the way users pass it (SLUICE_API_KEY) must not appear in any byte sluice writes: stdout
 * and stderr (text and JSON logs, `--debug` stack traces), its error messages (the service's 401), and every file
 * under the workspace — outputs (DuckDB files read as bytes, Parquet, JSONL), `_sluice_state`, manifests, the state
 * directory, dead letters. The other credentials (connection strings in every form) are connection-secrets.test.ts's.
 *
 * The commands run in this process (canary.ts: their output as the real process writes it), except the refused key
 * in text: the real executable proves the process itself (its stderr, its exit) says nothing of the key either.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT_CODES } from '../../src/core/errors.js';
import { startEmulator, type EmulatorHandle } from '../../src/emulator/server.js';
import { everyFile, piecesIn, piecesOf, sluice as inProcess, type Command } from './canary.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const CANARY = 'sk-canary-7f3a9c21d4e5b6a7';
const KEY_PARTS = piecesOf(CANARY);

let emu: EmulatorHandle;
const dirs: string[] = [];
beforeAll(async () => {
  emu = await startEmulator({ apiKey: CANARY, seed: 7, size: 500, timeScale: 50 });
});
afterAll(async () => {
  await emu?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A fresh directory with the pipeline as p.yaml and `files` beside it. */
function workspace(pipeline: string, files: Record<string, string> = {}): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'sluice-secrets-'));
  dirs.push(dir);
  writeFileSync(path.join(dir, 'p.yaml'), pipeline);
  for (const [name, text] of Object.entries(files)) writeFileSync(path.join(dir, name), text);
  return dir;
}

const env = (baseUrl = emu.url): Record<string, string> => ({ SLUICE_API_KEY: CANARY, SLUICE_BASE_URL: baseUrl });

/** `sluice <command> <dir>/p.yaml …args` in this process. */
const sluice = (dir: string, args: string[], command = 'run', baseUrl?: string): Promise<Command> =>
  inProcess([command, path.join(dir, 'p.yaml'), ...args], env(baseUrl));

/** The real executable, asynchronously: the emulator answers from this process's event loop. */
function executable(dir: string, args: string[], baseUrl: string): Promise<Command> {
  const { SLUICE_API_KEY: _k, SLUICE_BASE_URL: _u, ...inherited } = process.env;
  const argv = ['run', path.join(dir, 'p.yaml'), ...args];
  const child = spawn(process.execPath, ['bin/sluice.js', ...argv], {
    cwd: ROOT,
    env: { ...inherited, ...env(baseUrl) },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (s: string) => (stdout += s));
  child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ args: argv, code: code ?? -1, stdout, stderr }));
  });
}

/** The canary, whole or in part, in no command's output and no file of `dir`; returns the files scanned. */
function expectNoCanary(dir: string, ...commands: Command[]): string[] {
  for (const c of commands) {
    expect(piecesIn(KEY_PARTS, c.stdout), c.stdout).toEqual([]);
    expect(piecesIn(KEY_PARTS, c.stderr), c.stderr).toEqual([]);
  }
  const files = everyFile(dir);
  expect(files.filter((f) => piecesIn(KEY_PARTS, f.bytes).length > 0).map((f) => f.file)).toEqual([]);
  return files.map((f) => f.file);
}

const SERVICE = [
  'version: 1',
  'name: secrets',
  'service:',
  '  base_url: ${SLUICE_BASE_URL}',
  '  api_key: ${SLUICE_API_KEY}',
  '  retry: { retries: 1, base_delay_ms: 10, max_delay_ms: 20 }',
  '',
].join('\n');

const SNAPSHOT = `source:
  type: snapshot
  dataset_id: gd_l1vikfnt1wgvvqz95w
  filter: { name: followers, operator: '>', value: 100 }
  records_limit: 200
  download: { format: jsonl, compress: true, batch_size: 1000 }
  poll: { interval_ms: 20 }
`;

describe('the API key never reaches an output, a log or a file', () => {
  it('a snapshot into DuckDB, Parquet and JSONL, with JSON logs', async () => {
    const dir = workspace(
      SERVICE +
        SNAPSHOT +
        'transforms: [{ type: normalize, preset: company_profile }]\n' +
        'sinks:\n' +
        '  - { type: duckdb, path: out/w.duckdb, table: companies }\n' +
        '  - { type: parquet, path: out/pq }\n' +
        '  - { type: jsonl, path: out/jsonl }\n',
    );
    const r = await sluice(dir, ['--no-progress', '--log-format', 'json', '--debug']);
    expect(r.code, r.stderr).toBe(0);
    for (const line of r.stderr.trim().split('\n')) expect(JSON.parse(line)).toHaveProperty('level');
    expect(JSON.parse(r.stdout)).toMatchObject({ status: 'ok', pipeline: 'secrets', records: 200 });
    const files = expectNoCanary(dir, r);
    // The scan saw what a run writes: the database, Parquet and JSONL files, manifests and the run's state.
    expect(files).toEqual(
      expect.arrayContaining([
        'out/w.duckdb',
        '.sluice/secrets/state.json',
        '.sluice/secrets/runs.jsonl',
        expect.stringMatching(/^out\/pq\/.*\.parquet$/),
        'out/pq/_sluice_manifest.json',
        expect.stringMatching(/^out\/jsonl\/.*\.jsonl$/),
        'out/jsonl/_sluice_manifest.json',
      ]),
    );
  });

  it('search pages into DuckDB with text logs, and a deep lookup with the embedded emulator (the key is its key too)', async () => {
    const serp = workspace(
      SERVICE +
        'source: { type: serp, zone: serp_zone, queries: [coffee, ramen], max_pages: 2 }\n' +
        'transforms: [{ type: normalize, preset: serp_organic }]\n' +
        'sink: { type: duckdb, path: out/w.duckdb, table: organic, write: merge, primary_key: [query, link] }\n',
    );
    const r = await sluice(serp, ['--no-progress']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^done: secrets$/m);
    expectNoCanary(serp, r);

    const lookup = workspace(
      SERVICE.replace('${SLUICE_BASE_URL}', 'emulator') +
        '  emulator: { seed: 3, time_scale: 200 }\n' +
        'source:\n' +
        '  type: deep_lookup\n' +
        '  query: Find all coffee roasters in Portland\n' +
        '  result_limit: 20\n' +
        '  max_cost: $100.00\n' +
        '  enrich: [{ column_name: ceo_name, query: Who is the CEO? }]\n' +
        '  poll: { interval_ms: 20 }\n' +
        'sink: { type: jsonl, path: out/dl }\n',
    );
    const l = await sluice(lookup, ['--no-progress', '--log-format', 'json']);
    expect(l.code, l.stderr).toBe(0);
    expect(JSON.parse(l.stdout)).toMatchObject({ status: 'ok' });
    expectNoCanary(lookup, l);
  });

  it('dead letters, their listing and their replay (a rejected record even quoting the key)', async () => {
    const pipeline =
      SERVICE +
      'source: { type: file, paths: [in.jsonl], format: jsonl }\n' +
      'transforms: [{ type: cast, fields: { n: int } }]\n' +
      'sink: { type: duckdb, path: out/w.duckdb, table: t }\n';
    const input = [
      '{"n": 1, "note": "fine"}',
      `{"n": "not a number", "note": "pasted by mistake: ${CANARY}"}`,
      `{"n": 3, "note": ${CANARY}}`,
      '',
    ].join('\n');
    const dir = workspace(pipeline, { 'in.jsonl': input });
    const r = await sluice(dir, ['--no-progress', '--debug']);
    expect(r.code, r.stderr).toBe(0);
    // The summary names the reasons; the one for the unquoted key quotes that raw line, so it must be redacted.
    expect(r.stdout).toMatch(/^ {2}dead letters 2 \(.*line is not valid JSON: .* ×1.*\)$/m);
    expect(r.stdout).toMatch(/^ {2}dead letters 2 \(.*field `n`: cannot cast "not a number" to int ×1.*\)$/m);
    // The input file holds the key (the user put it there); everything sluice wrote must not.
    const inputFile = path.join(dir, 'in.jsonl');
    rmSync(inputFile);
    expectNoCanary(dir, r);
    expect(readFileSync(path.join(dir, '.sluice/secrets/dead-letters.jsonl'), 'utf8')).toContain('***');
    writeFileSync(inputFile, input);

    const list = await sluice(dir, ['--json'], 'dead-letters');
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout.trim().split('\n')).toHaveLength(2);
    writeFileSync(path.join(dir, 'p.yaml'), pipeline.replace('{ n: int }', "{ n: int }, on_error: 'null'"));
    const replay = await sluice(dir, ['--replay', '--no-progress', '--debug'], 'dead-letters');
    expect(replay.code, replay.stderr).toBe(0);
    expect(replay.stdout).toMatch(/^ {2}replayed {5}2$/m);
    rmSync(inputFile);
    expectNoCanary(dir, list, replay);
  });

  it('a pipeline file that fails to load, and `validate`, say nothing of the key', async () => {
    const dir = workspace(
      SERVICE + 'source: { type: serp, zone: serp_zone, querys: [coffee] }\nsink: { type: jsonl, path: out }\n',
    );
    const run = await sluice(dir, ['--no-progress', '--debug']);
    expect(run.code, run.stderr).toBe(EXIT_CODES.config);
    const validate = await sluice(dir, [], 'validate');
    // `validate` reports every problem it found, with the run's exit code for them: a configuration error.
    expect(validate.code, validate.stderr).toBe(EXIT_CODES.config);
    expect(validate.stdout).toMatch(/querys/);
    expectNoCanary(dir, run, validate);
  });

  it('a key the service refuses: the 401 error, with --debug, from the real executable in text, and in JSON', async () => {
    const other = await startEmulator({ apiKey: 'another-key-entirely', seed: 7, size: 500, timeScale: 50 });
    try {
      for (const format of ['text', 'json']) {
        const dir = workspace(SERVICE + SNAPSHOT + 'sink: { type: parquet, path: out/pq }\n');
        const args = ['--no-progress', '--log-format', format, '--debug'];
        // The real process once (what it writes is what a user sees), this process for the JSON form.
        const r =
          format === 'text' ? await executable(dir, args, other.url) : await sluice(dir, args, 'run', other.url);
        expect(r.code, r.stderr).toBe(EXIT_CODES.config);
        // The run's preflight asks the service before any work, names the setting that holds the key and, in the
        // fix, the variable this pipeline reads it from.
        const refused = 'the service refused the API key (service.api_key): Invalid credentials';
        const fix = 'the API key was refused: set SLUICE_API_KEY to a valid key';
        if (format === 'text') {
          expect(r.stderr).toContain(`\nerror: ${refused}\n  fix: ${fix}\n`);
          expect(r.stderr).toMatch(/^\s+at /m); // --debug printed the stack
        } else {
          // JSON logs: the final error is a JSON line too, its stack included under --debug.
          const lines = r.stderr
            .trim()
            .split('\n')
            .map((line) => JSON.parse(line) as Record<string, unknown>);
          const error = lines.find((line) => line.level === 'error');
          expect(error).toMatchObject({ msg: refused, fix, exit_code: EXIT_CODES.config });
          expect(error?.stack).toMatch(/^\s+at /m);
          expect(JSON.parse(r.stdout)).toMatchObject({ status: 'failed' });
        }
        expectNoCanary(dir, r);
      }
    } finally {
      await other.close();
    }
  });
});
