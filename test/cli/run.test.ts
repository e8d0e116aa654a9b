import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/cli.js';
import { memoryIo } from './memory-io.js';

/** A local-file pipeline into JSONL: runs without the service. */
function filePipeline(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'sluice-run-'));
  writeFileSync(
    path.join(dir, 'in.jsonl'),
    ['{"id":1,"s":"a"}', '{"id":2,"s":"b"}', '{"id":3,"s":"c"}', ''].join('\n'),
  );
  const file = path.join(dir, 'p.yaml');
  writeFileSync(
    file,
    'version: 1\nname: run_test\nservice: { base_url: emulator, api_key: emulator-key }\n' +
      'source: { type: file, paths: [in.jsonl], format: jsonl }\n' +
      'transforms: [ { type: select, fields: [id, s] } ]\n' +
      'sink: { type: jsonl, path: out }\n',
  );
  return file;
}

describe('sluice run', () => {
  it('runs a pipeline, prints the summary, then the first rows of each output', async () => {
    const io = memoryIo({});
    const file = filePipeline();
    expect(await runCli(['run', file, '--quiet', '--no-progress', '--show', '2'], io), io.stderr.join('\n')).toBe(0);
    const out = io.stdout.join('\n');
    expect(out).toMatch(/^done: run_test$/m);
    expect(out).toMatch(/^ {2}records {6}3$/m);
    // The sink's `path: out`, shown from the current directory (absolute here: the pipeline is outside it).
    expect(out).toContain(`== jsonl ${path.join(path.dirname(file), 'out')}: first 2 rows`);
    const rows = io.stdout.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { id: number });
    expect(rows).toHaveLength(2);
    expect(io.stderr).toEqual([]);
  });

  it('prints the summary as one JSON object with --log-format json', async () => {
    const io = memoryIo({});
    expect(
      await runCli(['run', filePipeline(), '--log-format', 'json', '--no-progress'], io),
      io.stderr.join('\n'),
    ).toBe(0);
    expect(io.stdout).toHaveLength(1);
    expect(JSON.parse(io.stdout[0]!)).toMatchObject({ status: 'ok', pipeline: 'run_test', records: 3 });
    for (const line of io.stderr) expect(() => JSON.parse(line) as unknown).not.toThrow();
  });
});

/** Every record in the JSONL files under `dir` (gzip or not). */
function jsonlRecords(dir: string): number {
  let n = 0;
  for (const f of readdirSync(dir, { recursive: true }) as string[]) {
    if (!/\.jsonl(\.gz)?$/.test(f) || f.split(path.sep).some((p) => p.startsWith('.'))) continue;
    const bytes = readFileSync(path.join(dir, f));
    n += (f.endsWith('.gz') ? gunzipSync(bytes) : bytes).toString('utf8').split('\n').filter(Boolean).length;
  }
  return n;
}

describe('sluice run --fresh', () => {
  it('refuses to append a second time into an output holding earlier runs (exit 2), unless told to', async () => {
    const file = filePipeline();
    writeFileSync(
      path.join(path.dirname(file), 'in.jsonl'),
      Array.from({ length: 50 }, (_, i) => JSON.stringify({ id: i, s: `line ${i}` }) + '\n').join(''),
    );
    const out = path.join(path.dirname(file), 'out');
    expect(await runCli(['run', file, '--quiet', '--no-progress'], memoryIo({}))).toBe(0);
    expect(jsonlRecords(out)).toBe(50);

    const refused = memoryIo({});
    expect(await runCli(['run', file, '--fresh', '--quiet', '--no-progress'], refused)).toBe(2);
    const said = refused.stderr.join('\n');
    expect(said).toContain(`jsonl ${out} (write: append) holds 1 unit(s) committed by 1 earlier run(s)`);
    expect(said).toMatch(/fix: .*without --fresh.*`write: replace`.*--allow-duplicates/);
    expect(jsonlRecords(out), 'nothing loaded twice').toBe(50);

    const confirmed = memoryIo({});
    expect(
      await runCli(['run', file, '--fresh', '--allow-duplicates', '--quiet', '--no-progress'], confirmed),
      confirmed.stderr.join('\n'),
    ).toBe(0);
    expect(jsonlRecords(out)).toBe(100);
  });
});

describe('sluice plan', () => {
  it('lists units and targets without running anything', async () => {
    const io = memoryIo({});
    expect(await runCli(['plan', filePipeline()], io), io.stderr.join('\n')).toBe(0);
    const lines = io.stdout.join('\n').split('\n');
    expect(lines[0]).toBe('plan: run_test (source file)');
    expect(lines[1]).toBe('units: 1');
    expect(lines).toContain('targets:');
    expect(lines.some((l) => /^ {2}jsonl .*out$/.test(l))).toBe(true);
  });

  it('plans a crawl from the example pipeline against the embedded emulator', async () => {
    const io = memoryIo({});
    // A copy, so the state directory the planner opens is not created inside the repository.
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'sluice-plan-')), 'serp.yaml');
    copyFileSync(path.resolve(import.meta.dirname, '../../pipelines/serp.yaml'), file);
    expect(await runCli(['plan', file, '--json'], io), io.stderr.join('\n')).toBe(0);
    const plan = JSON.parse(io.stdout.join('\n')) as { source: string; units: { id: string }[] };
    expect(plan.source).toBe('serp');
    expect(plan.units).toHaveLength(3);
  });

  it('refuses a shard of a pipeline whose sink replaces its output, before any state or output exists', async () => {
    const file = filePipeline();
    const dir = path.dirname(file);
    writeFileSync(
      file,
      readFileSync(file, 'utf8').replace(
        'sink: { type: jsonl, path: out }',
        'sink: { type: duckdb, path: w.duckdb, table: t, write: replace }',
      ),
    );
    const io = memoryIo({});
    expect(await runCli(['run', file, '--shard', '0/2', '--quiet'], io)).not.toBe(0);
    expect(io.stderr.join('\n')).toMatch(/duckdb sink: `write: replace` does not work with shards/);
    expect(io.stderr.join('\n')).toMatch(/write: append/);
    expect(existsSync(path.join(dir, '.sluice'))).toBe(false);
    expect(existsSync(path.join(dir, 'w.duckdb'))).toBe(false);
  });
});
