/**
 * Bad-input corpus (see harness.ts): a wrong command line, and local outputs, state and inputs that cannot be used:
 * each is refused before any work starts, with what to change.
 */
import { chmodSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { EXIT_CODES } from '../../../src/core/errors.js';
import { cli, expectFailure, expectNothingCommitted, expectNothingWritten, type Workspace } from './harness.js';
import { FILTER_SOURCE, HEAD, JSONL_SINK, emu, env, filterJobs, run, useCorpus, workspace } from './corpus.js';

useCorpus();

describe('a wrong command line: usage error, exit 2', () => {
  const argCases: [string, string[], RegExp, RegExp][] = [
    [
      '--shard past the last shard',
      ['--shard', '4/4'],
      /^--shard must be i\/n with 0 ≤ i < n, e\.g\. 0\/4 \(got "4\/4"\)$/,
      /^see sluice run --help/,
    ],
    [
      '--shard that is not i/n',
      ['--shard', 'half'],
      /^--shard must be i\/n .*\(got "half"\)$/,
      /^see sluice run --help/,
    ],
    ['--shard of zero shards', ['--shard', '0/0'], /^--shard must be i\/n .*\(got "0\/0"\)$/, /^see sluice run --help/],
    [
      '--shard with three parts',
      ['--shard', '1/4/2'],
      /^--shard must be i\/n .*\(got "1\/4\/2"\)$/,
      /^see sluice run --help/,
    ],
    ['--shard without a value', ['--shard'], /^--shard must be i\/n /, /^see sluice run --help/],
    ['an option misspelled', ['--shrad', '0/4'], /^Unknown argument: shrad$/, /^see sluice run --help/],
    ['--show 0', ['--show', '0'], /^--show must be a whole number ≥ 1 \(got "0"\)$/, /^see sluice run --help/],
  ];
  it.each(argCases)('%s', async (_name, extra, error, fix) => {
    const r = await run({ 'p.yaml': HEAD + 'source: { type: countries }\n' + JSONL_SINK }, [
      'run',
      '{p}',
      '--no-progress',
      ...extra,
    ]);
    expectFailure(r, error, fix, 2);
    expectNothingWritten(r.ws, r.before);
  });
});

const AS_ROOT = process.getuid?.() === 0;
/**
 * A directory no sink can write to: a read-only one, or as root (which ignores permissions) a path under /sys.
 * `restore` makes the workspace removable again.
 */
function unwritableDir(ws: Workspace): { dir: string; restore(): void } {
  if (AS_ROOT) return { dir: `/sys/sluice-bad-input-${Math.random().toString(36).slice(2)}`, restore: () => {} };
  const dir = ws.path('readonly');
  ws.write('readonly/.keep', '');
  chmodSync(dir, 0o555);
  return { dir: `${dir}/out`, restore: () => chmodSync(dir, 0o755) };
}

describe('an output that cannot be written: refused before any work starts', () => {
  const sinks: [string, (p: string) => string][] = [
    ['duckdb', (p) => `sink: { type: duckdb, path: ${p}/w.duckdb, table: t }\n`],
    ['parquet', (p) => `sink: { type: parquet, path: ${p}/pq }\n`],
    ['jsonl', (p) => `sink: { type: jsonl, path: ${p}/out }\n`],
  ];
  it.each(sinks)('%s sink in a directory it may not write', async (_type, sink) => {
    const ws = workspace();
    const { dir, restore } = unwritableDir(ws);
    ws.write('p.yaml', HEAD + FILTER_SOURCE + sink(dir));
    const paid = filterJobs();
    const before = ws.files();
    const r = await cli(['run', ws.path('p.yaml'), '--no-progress'], env()).finally(restore);
    expectFailure(
      r,
      /cannot (write to|create the directory of|create the output directory) .*\((EACCES|EPERM|EROFS|ENOENT)\)$/,
      /write access|somewhere writable/,
    );
    expect(filterJobs()).toBe(paid);
    await expectNothingCommitted(ws, before);
  });

  it.each(sinks)('%s sink whose path runs through a file', async (_type, sink) => {
    const ws = workspace();
    ws.write('blocker', 'a file where a directory is expected\n');
    ws.write('p.yaml', HEAD + FILTER_SOURCE + sink(ws.path('blocker')));
    const paid = filterJobs();
    const before = ws.files();
    const r = await cli(['run', ws.path('p.yaml'), '--no-progress'], env());
    expectFailure(r, /blocker.*\(E(NOTDIR|EXIST)\)$/, /a file is in the way|not a directory/);
    expect(filterJobs()).toBe(paid);
    await expectNothingCommitted(ws, before);
  });
});

describe('state, dead letters and emulator settings that cannot be used', () => {
  const countries = 'source: { type: countries }\n' + JSONL_SINK;
  const cases: [string, string, Record<string, string>, RegExp, RegExp, number?][] = [
    [
      'state_dir runs through a file',
      HEAD + 'state_dir: blocker/state\n' + countries,
      { blocker: 'a file\n' },
      /^cannot use the state directory .*blocker\/state \(ENOTDIR\)$/,
      /^a file is in the way: point `state_dir` at a directory/,
    ],
    [
      'dead_letter names a directory',
      HEAD + 'dead_letter: letters\n' + countries,
      { 'letters/.keep': '' },
      /^cannot write the dead-letter file .*letters \(EISDIR\)$/,
      /^set `dead_letter` to a file path \(relative to the pipeline file\), not a directory$/,
    ],
    [
      'the run state was damaged',
      HEAD + countries,
      { '.sluice/bad_input/state.json': '{"run:id": "2026' },
      /^the run state .*\.sluice\/bad_input\/state\.json is not valid JSON: /,
      /^it was changed outside sluice: restore it, or delete it/,
    ],
    [
      'the embedded emulator’s faults file does not exist',
      HEAD.replace('${SLUICE_BASE_URL}', 'emulator') + '  emulator: { faults: faults.yaml }\n' + countries,
      {},
      /p\.yaml:7:23: service\.emulator\.faults: no such file: .*faults\.yaml$/,
      /^name the emulator's fault-injection YAML; relative paths start at the pipeline file's directory \(.+\)$/,
      EXIT_CODES.config,
    ],
  ];
  it.each(cases)('%s', async (_name, yaml, files, error, fix, code) => {
    const r = await run({ 'p.yaml': yaml, ...files });
    expectFailure(r, error, fix, code);
    await expectNothingCommitted(r.ws, r.before);
  });
});

describe('local inputs that are missing or wrong', () => {
  it('a file source path that does not exist', async () => {
    const r = await run({
      'p.yaml': HEAD + 'source: { type: file, paths: [data/missing.jsonl], format: jsonl }\n' + JSONL_SINK,
    });
    expectFailure(
      r,
      /p\.yaml:7:31: source\.paths\[0\]: no such file: .*data\/missing\.jsonl$/,
      /^name an input file or a directory of them; relative paths start at the pipeline file's directory \(.+\)$/,
      EXIT_CODES.config,
    );
    await expectNothingCommitted(r.ws, r.before);
  });

  it('a queries_file that does not exist', async () => {
    const r = await run({
      'p.yaml': HEAD + 'source: { type: serp, zone: serp_zone, queries_file: queries.csv }\n' + JSONL_SINK,
    });
    expectFailure(
      r,
      /p\.yaml:7:54: source\.queries_file: no such file: .*queries\.csv$/,
      /^name the queries to search; relative paths start at the pipeline file's directory \(.+\)$/,
      EXIT_CODES.config,
    );
    await expectNothingCommitted(r.ws, r.before);
  });

  it('a CSV queries_file without a `query` column', async () => {
    const requests = emu.stats.routes['POST /request'] ?? 0;
    const r = await run({
      'p.yaml': HEAD + 'source: { type: serp, zone: serp_zone, queries_file: queries.csv }\n' + JSONL_SINK,
      'queries.csv': 'keyword,country\ncoffee,us\nramen,de\n',
    });
    expectFailure(r, /queries\.csv has no `query` column \(its header is "keyword,country"\)$/, /`query`/);
    expect(emu.stats.routes['POST /request'] ?? 0).toBe(requests);
    await expectNothingCommitted(r.ws, r.before);
  });
});
