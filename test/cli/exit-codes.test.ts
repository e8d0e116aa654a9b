/**
 * Each exit code of EXIT_CODES, through the CLI as cron sees it, with the message that goes with it; and the same
 * final error as one JSON line under `--log-format json`. The table (docs/guides/nightly-cron.md) holds for every
 * command: `validate` finding a problem exits 2 as `run` does on the same file, a refused API key is configuration
 * (2, no resume), an output on a read-only filesystem is a failure (1) that names the filesystem's own error.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/cli.js';
import { EXIT_CODES } from '../../src/core/errors.js';
import { silentLogger } from '../../src/runtime/logger.js';
import { pipelinePaths } from '../../src/state/paths.js';
import { acquireRunLock } from '../../src/state/run-lock.js';
import { startEmulator, type EmulatorHandle } from '../../src/emulator/server.js';
import { loadPipeline } from '../../src/pipeline/load.js';
import { readOnlyDir, type ReadOnlyDir } from '../support/read-only-dir.js';
import { memoryIo } from './memory-io.js';

const broken = path.resolve(import.meta.dirname, '../fixtures/broken');

/** A local-file pipeline into JSONL (runs without the service), with extra top-level lines. */
function filePipeline(rows: string[], extra = ''): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'sluice-exit-'));
  writeFileSync(path.join(dir, 'in.jsonl'), [...rows, ''].join('\n'));
  const file = path.join(dir, 'p.yaml');
  writeFileSync(
    file,
    'version: 1\nname: exit_test\nservice: { base_url: emulator, api_key: emulator-key }\n' +
      'source: { type: file, paths: [in.jsonl], format: jsonl }\n' +
      'sink: { type: jsonl, path: out }\n' +
      extra,
  );
  return file;
}

const quiet = ['--quiet', '--no-progress'];

describe('exit codes', () => {
  it('0: the run completed', async () => {
    const io = memoryIo({});
    expect(await runCli(['run', filePipeline(['{"id":1}']), ...quiet], io), io.stderr.join('\n')).toBe(
      EXIT_CODES.success,
    );
  });

  it('2: a wrong command line, or a pipeline file that is wrong', async () => {
    expect(await runCli(['run'], memoryIo({}))).toBe(EXIT_CODES.config);
    expect(await runCli(['run', path.join(broken, 'bad-enum.yaml')], memoryIo({}))).toBe(EXIT_CODES.config);
  });

  it('2: --wait written before the pipeline file took the file for its duration, and says so', async () => {
    const io = memoryIo({});
    expect(await runCli(['run', '--wait', 'nightly.yaml'], io)).toBe(EXIT_CODES.config);
    expect(io.stderr).toEqual([
      'error: --wait took "nightly.yaml" for its duration',
      '  fix: write --wait=10m (with "="), or put --wait after the pipeline file',
    ]);
  });

  it('3: another run holds the lock, naming who; --wait waits for it instead', async () => {
    const file = filePipeline(['{"id":1}']);
    const lockFile = pipelinePaths(await loadPipeline(file, {})).lockFile;
    mkdirSync(path.dirname(lockFile), { recursive: true });
    const lock = await acquireRunLock(lockFile, {
      command: 'sluice run held-by-test.yaml',
      log: silentLogger,
    });
    try {
      const io = memoryIo({});
      expect(await runCli(['run', file, ...quiet], io)).toBe(EXIT_CODES.locked);
      expect(io.stderr[0]).toMatch(
        new RegExp(`^error: .* is locked by pid ${process.pid} on .* \\(sluice run held-by-test\\.yaml\\)$`),
      );
      expect(io.stderr[1]).toMatch(/--wait/);

      // Released only once the waiting run says it waits: it can complete only by having waited.
      const waiting = memoryIo({});
      const saysItWaits = new Promise<void>((resolve) => {
        const err = waiting.err;
        waiting.err = (text) => {
          err(text);
          if (text.includes('waiting for the lock')) resolve();
        };
      });
      const run = runCli(['run', file, '--wait=1m', '--no-progress'], waiting);
      await Promise.race([
        saysItWaits,
        run.then((code) => Promise.reject(new Error(`the run ended (${code}) without waiting for the lock`))),
      ]);
      await lock.release();
      expect(await run, waiting.stderr.join('\n')).toBe(EXIT_CODES.success);
    } finally {
      await lock.release();
    }
  });

  it('4: more records were dead-lettered than max_dead_letters allows', async () => {
    const file = filePipeline(
      ['{"n":"1"}', '{"n":"x"}', '{"n":"y"}'],
      'max_dead_letters: 1\ntransforms: [ { type: cast, fields: { n: int } } ]\n',
    );
    const io = memoryIo({});
    expect(await runCli(['run', file, ...quiet], io), io.stderr.join('\n')).toBe(EXIT_CODES.failureBudget);
    expect(io.stderr.join('\n')).toMatch(/max_dead_letters/);
  });

  it('130 and 143: interrupted by SIGINT or SIGTERM, saying what was kept', async () => {
    for (const [signal, code] of [
      ['SIGINT', EXIT_CODES.sigint],
      ['SIGTERM', EXIT_CODES.sigterm],
    ] as const) {
      const io = memoryIo({});
      io.interrupt(signal);
      expect(await runCli(['run', filePipeline(['{"id":1}']), ...quiet], io)).toBe(code);
      expect(io.stderr.at(-1)).toBe('interrupted: 0/1 units committed; run again to resume');
    }
  });
});

describe('the final error under --log-format json', () => {
  it('is one JSON line with the message, the fix and the exit code', async () => {
    const io = memoryIo({});
    const file = path.join(broken, 'unknown-key-source.yaml');
    expect(await runCli(['run', file, '--log-format', 'json'], io)).toBe(EXIT_CODES.config);
    expect(io.stderr).toHaveLength(1);
    const line = JSON.parse(io.stderr[0]!) as Record<string, unknown>;
    expect(line).toMatchObject({
      level: 'error',
      msg: `${file}:10:3: source.max_page: unknown key "max_page" (did you mean "max_pages"?)`,
      error: 'PipelineFileError',
      exit_code: 2,
    });
    expect(line.fix).toMatch(/^allowed keys in source \(serp\)/);
  });

  it('also for a command line yargs refused', async () => {
    const io = memoryIo({});
    expect(await runCli(['run', 'p.yaml', '--frsh', '--log-format=json'], io)).toBe(EXIT_CODES.config);
    expect(JSON.parse(io.stderr[0]!)).toMatchObject({ msg: 'Unknown argument: frsh', exit_code: 2 });
  });
});

describe('a refused API key', () => {
  let emulator: EmulatorHandle;
  beforeAll(async () => {
    emulator = await startEmulator({ apiKey: 'the-right-key', size: 100 });
  });
  afterAll(() => emulator.close());

  it('exits 2, a configuration error: names the variable the pipeline reads the key from, says nothing of resuming', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'sluice-401-'));
    const file = path.join(dir, 'p.yaml');
    writeFileSync(
      file,
      `version: 1\nname: key_test\nservice: { base_url: "${emulator.url}", api_key: "\${SLUICE_APIKEY}" }\n` +
        'source: { type: snapshot, snapshot_id: snap_nope }\nsink: { type: jsonl, path: out }\n',
    );
    const io = memoryIo({ SLUICE_APIKEY: 'a-wrong-key' });
    expect(await runCli(['run', file, ...quiet], io)).toBe(EXIT_CODES.config);
    expect(io.stderr.at(-1)).toBe('  fix: the API key was refused: set SLUICE_APIKEY to a valid key');
    expect(io.stderr.join('\n')).not.toMatch(/resume|run again|rerun/i);
    // A command that is no run says the same with the same code.
    const list = memoryIo({ SLUICE_API_KEY: 'a-wrong-key', SLUICE_BASE_URL: emulator.url });
    expect(await runCli(['datasets', 'list'], list)).toBe(EXIT_CODES.config);
    expect(list.stderr.at(-1)).toBe('  fix: the API key was refused: set SLUICE_API_KEY to a valid key');
  });
});

describe('validate', () => {
  it('0 when every file is right; 2 when it finds a problem, the code `run` exits with on the same file', async () => {
    const good = memoryIo({});
    expect(await runCli(['validate', filePipeline(['{"id":1}'])], good), good.stdout.join('\n')).toBe(
      EXIT_CODES.success,
    );
    const bad = path.join(broken, 'bad-enum.yaml');
    const io = memoryIo({});
    expect(await runCli(['validate', bad], io)).toBe(EXIT_CODES.config);
    expect(io.stdout.join('\n')).toContain(`${bad}:`);
    expect(await runCli(['run', bad, ...quiet], memoryIo({}))).toBe(EXIT_CODES.config);
  });
});

const readOnly = readOnlyDir();

describe.skipIf('unavailable' in readOnly)('an output directory on a read-only filesystem', () => {
  const ro = readOnly as ReadOnlyDir;
  afterAll(() => ro.release());

  it.each([
    [
      'parquet',
      (dir: string) => `{ type: parquet, path: "${dir}/pq" }`,
      /cannot create the output directory .*\/pq \(EROFS\)$/,
    ],
    [
      'jsonl',
      (dir: string) => `{ type: jsonl, path: "${dir}/deep/js" }`,
      /cannot create the output directory .*\/deep\/js \(EROFS\)$/,
    ],
    [
      'duckdb',
      (dir: string) => `{ type: duckdb, path: "${dir}/w.duckdb", table: t }`,
      /cannot open .*\/w\.duckdb: read-only file system \(EROFS\)$/,
    ],
  ])('%s: exit 1, naming the filesystem’s own error (EROFS), and the fix', async (_kind, sink, error) => {
    const file = filePipeline(['{"id":1}']).replace(/p\.yaml$/, 'ro.yaml');
    writeFileSync(
      file,
      'version: 1\nname: exit_ro\nsource: { type: file, paths: [in.jsonl], format: jsonl }\n' +
        `sink: ${sink(ro.path)}\n`,
    );
    const io = memoryIo({});
    expect(await runCli(['run', file, ...quiet], io), io.stderr.join('\n')).toBe(EXIT_CODES.failure);
    const [e, fix] = io.stderr.slice(-2);
    expect(e).toMatch(/^error: /);
    expect(e).toMatch(error);
    expect(e).not.toContain('ENOENT');
    expect(fix).toMatch(/^ {2}fix: .*mounted read-only: mount it read-write, or point .* somewhere writable$/);
  });
});
