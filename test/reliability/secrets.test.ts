/**
 * A canary API key passed the way users pass it (SLUICE_API_KEY) must not appear in any byte sluice writes: the
 * real executable's stdout and stderr (text and JSON logs, `--debug` stack traces), its error messages (the
 * service's 401, a network error), and every file under the workspace — outputs (DuckDB files read as bytes,
 * Parquet, JSONL), `_sluice_state`, manifests, the state directory, dead letters.
 */
import { spawn } from 'node:child_process';
import { lstatSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT_CODES } from '../../src/core/errors.js';
import { startEmulator, type EmulatorHandle } from '../../src/emulator/server.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const CANARY = 'sk-canary-7f3a9c21d4e5b6a7';
/**
 * Every 8-character piece of the key: an error message that quotes raw input cut short (V8's JSON.parse quotes
 * only a window of the text) can hold part of the key, which exact-match redaction does not catch.
 */
const KEY_PARTS = Array.from({ length: CANARY.length - 7 }, (_, i) => CANARY.slice(i, i + 8));

function partsOfKeyIn(text: string | Buffer): string[] {
  return KEY_PARTS.filter(
    (part) => text.includes(part) || (Buffer.isBuffer(text) && text.includes(Buffer.from(part, 'utf16le'))),
  );
}

let emu: EmulatorHandle;
const dirs: string[] = [];
beforeAll(async () => {
  emu = await startEmulator({ apiKey: CANARY, seed: 7, size: 2000, timeScale: 50 });
});
afterAll(async () => {
  await emu?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
  dir: string;
}

/**
 * Runs the real executable on `pipeline` (written as p.yaml in a fresh directory, with `files` beside it),
 * asynchronously: the emulator answers from this process's event loop.
 */
function sluice(
  pipeline: string,
  args: string[],
  opts: { files?: Record<string, string>; baseUrl?: string; command?: string; dir?: string } = {},
): Promise<Ran> {
  const dir = opts.dir ?? mkdtempSync(path.join(tmpdir(), 'sluice-secrets-'));
  if (!opts.dir) dirs.push(dir);
  writeFileSync(path.join(dir, 'p.yaml'), pipeline);
  for (const [name, text] of Object.entries(opts.files ?? {})) writeFileSync(path.join(dir, name), text);
  const { SLUICE_API_KEY: _k, SLUICE_BASE_URL: _u, ...inherited } = process.env;
  const child = spawn(process.execPath, ['bin/sluice.js', opts.command ?? 'run', path.join(dir, 'p.yaml'), ...args], {
    cwd: ROOT,
    env: { ...inherited, SLUICE_API_KEY: CANARY, SLUICE_BASE_URL: opts.baseUrl ?? emu.url },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (s: string) => (stdout += s));
  child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr, dir }));
  });
}

/** Every file under `dir` (symlinks not followed), as bytes. */
function everyFile(root: string, dir = root): { file: string; bytes: Buffer }[] {
  const out: { file: string; bytes: Buffer }[] = [];
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name);
    const st = lstatSync(p);
    if (st.isDirectory()) out.push(...everyFile(root, p));
    else if (st.isFile()) out.push({ file: path.relative(root, p), bytes: readFileSync(p) });
  }
  return out;
}

/**
 * The canary, whole or in part, in none of the output, none of the files; returns the files scanned (so a test can
 * see what was).
 */
function expectNoCanary(r: Ran): string[] {
  expect(r.stdout).not.toContain(CANARY);
  expect(r.stderr).not.toContain(CANARY);
  expect(partsOfKeyIn(r.stdout), r.stdout).toEqual([]);
  expect(partsOfKeyIn(r.stderr), r.stderr).toEqual([]);
  const files = everyFile(r.dir);
  const leaks = files.filter((f) => partsOfKeyIn(f.bytes).length > 0);
  expect(leaks.map((f) => f.file)).toEqual([]);
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
  records_limit: 1500
  download: { format: jsonl, compress: true, batch_size: 1000 }
  poll: { interval_ms: 20 }
`;

describe('the API key never reaches an output, a log or a file', () => {
  it('a snapshot into DuckDB, Parquet and JSONL, with JSON logs', async () => {
    const r = await sluice(
      SERVICE +
        SNAPSHOT +
        'transforms: [{ type: normalize, preset: company_profile }]\n' +
        'sinks:\n' +
        '  - { type: duckdb, path: out/w.duckdb, table: companies }\n' +
        '  - { type: parquet, path: out/pq }\n' +
        '  - { type: jsonl, path: out/jsonl }\n',
      ['--no-progress', '--log-format', 'json', '--debug'],
    );
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stderr.trim().split('\n');
    for (const line of lines) expect(JSON.parse(line)).toHaveProperty('level');
    expect(JSON.parse(r.stdout)).toMatchObject({ status: 'ok', pipeline: 'secrets', records: 1500 });
    const files = expectNoCanary(r);
    // The scan saw what a run writes: the database, Parquet and JSONL files, manifests and the run's state.
    expect(files).toEqual(
      expect.arrayContaining([
        'out/w.duckdb',
        '.sluice/secrets/state.json',
        expect.stringMatching(/^out\/pq\/.*\.parquet$/),
        'out/pq/_sluice_manifest.json',
        expect.stringMatching(/^out\/jsonl\/.*\.jsonl$/),
        'out/jsonl/_sluice_manifest.json',
      ]),
    );
  });

  it('search pages into DuckDB, with text logs', async () => {
    const r = await sluice(
      SERVICE +
        'source: { type: serp, zone: serp_zone, queries: [coffee, ramen], max_pages: 2 }\n' +
        'transforms: [{ type: normalize, preset: serp_organic }]\n' +
        'sink: { type: duckdb, path: out/w.duckdb, table: organic, write: merge, primary_key: [query, link] }\n',
      ['--no-progress'],
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^done: secrets$/m);
    expectNoCanary(r);
  });

  it('a deep lookup into JSONL, with the embedded emulator (the key is its key too)', async () => {
    const r = await sluice(
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
      ['--no-progress', '--log-format', 'json'],
    );
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ status: 'ok' });
    expectNoCanary(r);
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
    const r = await sluice(pipeline, ['--no-progress', '--debug'], { files: { 'in.jsonl': input } });
    expect(r.code, r.stderr).toBe(0);
    // The summary names the reasons; the one for the unquoted key quotes that raw line, so it must be redacted.
    expect(r.stdout).toMatch(/^ {2}dead letters 2 \(.+ ×1; .+ ×1\)$/m);
    expect(r.stdout).toMatch(/^ {2}dead letters 2 \(.*line is not valid JSON: .* ×1.*\)$/m);
    expect(r.stdout).toMatch(/^ {2}dead letters 2 \(.*field `n`: cannot cast "not a number" to int ×1.*\)$/m);
    // The input file holds the key (the user put it there); everything sluice wrote must not.
    const inputFile = path.join(r.dir, 'in.jsonl');
    rmSync(inputFile);
    expectNoCanary(r);
    const letters = readFileSync(path.join(r.dir, '.sluice/secrets/dead-letters.jsonl'), 'utf8');
    expect(letters).toContain('***');
    writeFileSync(inputFile, input);

    const list = await sluice(pipeline, ['--json'], { command: 'dead-letters', dir: r.dir });
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout.trim().split('\n')).toHaveLength(2);
    const replay = await sluice(
      pipeline.replace('{ n: int }', "{ n: int }, on_error: 'null'"),
      ['--replay', '--no-progress', '--debug'],
      {
        command: 'dead-letters',
        dir: r.dir,
      },
    );
    expect(replay.code, replay.stderr).toBe(0);
    expect(replay.stdout).toMatch(/^ {2}replayed {5}2$/m);
    rmSync(inputFile);
    expectNoCanary(list);
    expectNoCanary(replay);
  });

  it('a key the service refuses: the 401 error, with --debug, in text and JSON', async () => {
    const other = await startEmulator({ apiKey: 'another-key-entirely', seed: 7, size: 2000, timeScale: 50 });
    try {
      for (const format of ['text', 'json']) {
        const r = await sluice(
          SERVICE + SNAPSHOT + 'sink: { type: parquet, path: out/pq }\n',
          ['--no-progress', '--log-format', format, '--debug'],
          { baseUrl: other.url },
        );
        expect(r.code, r.stderr).toBe(EXIT_CODES.failure);
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
          expect(error).toMatchObject({ msg: refused, fix, exit_code: EXIT_CODES.failure });
          expect(error?.stack).toMatch(/^\s+at /m);
          expect(JSON.parse(r.stdout)).toMatchObject({ status: 'failed' });
        }
        expectNoCanary(r);
      }
    } finally {
      await other.close();
    }
  });

  it('a service that cannot be reached: the network error, with --debug', async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    await new Promise((resolve) => server.close(resolve));
    const r = await sluice(
      SERVICE.replace('retries: 1', 'retries: 0') + 'source: { type: countries }\nsink: { type: jsonl, path: out }\n',
      ['--no-progress', '--debug'],
      { baseUrl: `http://127.0.0.1:${port}` },
    );
    expect(r.code, r.stderr).toBe(EXIT_CODES.failure);
    const address = `127\\.0\\.0\\.1:${port}`;
    expect(r.stderr).toMatch(
      new RegExp(`^error: cannot reach http://${address}: connect ECONNREFUSED ${address}$`, 'm'),
    );
    expect(r.stderr).toMatch(/^\s+at /m);
    expectNoCanary(r);
  });

  it('a pipeline file that fails to load, and `validate`, say nothing of the key', async () => {
    const bad =
      SERVICE + 'source: { type: serp, zone: serp_zone, querys: [coffee] }\nsink: { type: jsonl, path: out }\n';
    const run = await sluice(bad, ['--no-progress', '--debug']);
    expect(run.code, run.stderr).toBe(EXIT_CODES.config);
    expectNoCanary(run);
    const validate = await sluice(bad, [], { command: 'validate' });
    // `validate` reports the problems it found (its documented exit 1), it does not fail on them as a run does.
    expect(validate.code, validate.stderr).toBe(1);
    expect(validate.stdout).toMatch(/querys/);
    expectNoCanary(validate);
  });
});
