/**
 * Dead letters for real, and their replay: a file source with malformed JSONL lines (decode letters) and values a
 * `cast` rejects (transform letters) goes through `select → rename → cast` into DuckDB. The fix is in the pipeline
 * for the cast letters (int → double: the same raw records now pass) and in the letters themselves for the decode
 * ones (the user repairs `raw` in the dead-letter file). `sluice dead-letters --replay` then loads each record
 * exactly once: replaying again adds nothing, a replay that crashed part-way and is run again adds each record
 * once, and `write: replace` sinks get the records added to what the last run wrote.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/runtime/logger.js';
import { replayDeadLetters } from '../../src/operations/replay.js';
import { loadPipeline } from '../../src/pipeline/load.js';
import { cli, workspace, type Result, type Workspace } from './bad-input/harness.js';

const FILES = ['a', 'b', 'c'];

/**
 * File `f` (0-based): ids f*100+1…+6. Ids +3 and +5 have `n_raw` "2.5" (not an int: the cast rejects them); id +6
 * is a line cut short (not JSON: the decoder rejects it). Every record has a field `x` that `select` drops.
 */
function inputFile(f: number): string {
  const id = (k: number) => f * 100 + k;
  return [
    ...[1, 2, 3, 4, 5].map((k) => JSON.stringify({ id: id(k), n_raw: k === 3 || k === 5 ? '2.5' : k, x: 'dropped' })),
    `{"id": ${id(6)}, "n_raw": 6, "x": "dropped"`,
    '',
  ].join('\n');
}

const allIds = FILES.flatMap((_, f) => [1, 2, 3, 4, 5, 6].map((k) => f * 100 + k));

function pipeline(
  opts: { cast?: string; write?: 'append' | 'replace'; select?: boolean; parquet?: boolean } = {},
): string {
  const write = opts.write ?? 'append';
  return [
    'version: 1',
    'name: dl',
    'service: { base_url: emulator, api_key: dl-test-key }',
    'source: { type: file, paths: [data], format: jsonl, concurrency: 1 }',
    'transforms:',
    ...(opts.select === false ? [] : ['  - { type: select, fields: [id, n_raw] }']),
    '  - { type: rename, fields: { n_raw: n } }',
    `  - { type: cast, fields: { n: ${opts.cast ?? 'int'} } }`,
    'sinks:',
    `  - { type: duckdb, path: out/w.duckdb, table: t, write: ${write} }`,
    `  - { type: jsonl, path: out/jsonl, write: ${write} }`,
    ...(opts.parquet ? [`  - { type: parquet, path: out/pq, write: ${write} }`] : []),
    '',
  ].join('\n');
}

function setup(text = pipeline()): { ws: Workspace; file: string } {
  const ws = workspace();
  FILES.forEach((name, f) => ws.write(`data/${name}.jsonl`, inputFile(f)));
  return { ws, file: ws.write('p.yaml', text) };
}

async function ok(argv: string[]): Promise<Result> {
  const r = await cli(argv, {});
  expect(r.code, r.stderr.join('\n')).toBe(0);
  return r;
}

const runIt = (file: string) => ok(['run', file, '--no-progress', '--quiet']);
const replay = (file: string) => ok(['dead-letters', file, '--replay', '--no-progress', '--quiet']);

/** Rows of the DuckDB table (id, n), ordered by id. */
async function tableRows(ws: Workspace): Promise<[number, number | null][]> {
  const instance = await DuckDBInstance.fromCache(ws.path('out/w.duckdb'));
  const conn = await instance.connect();
  try {
    const r = await conn.runAndReadAll('SELECT id, n FROM t ORDER BY id, n');
    return r.getRows().map(([id, n]) => [Number(id), n === null ? null : Number(n)]);
  } finally {
    conn.closeSync();
  }
}

/** Ids in the JSONL output, as listed by its manifest (what readers are told is committed). */
function jsonlIds(ws: Workspace): number[] {
  const dir = ws.path('out/jsonl');
  const manifest = JSON.parse(readFileSync(path.join(dir, '_sluice_manifest.json'), 'utf8')) as {
    units: Record<string, { files: string[] }>;
  };
  // Units published together share their files.
  return [...new Set(Object.values(manifest.units).flatMap((u) => u.files))]
    .flatMap((f) =>
      readFileSync(path.join(dir, f), 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => (JSON.parse(l) as { id: number }).id),
    )
    .sort((a, b) => a - b);
}

/** Ids in the Parquet output's files listed by its manifest. */
async function parquetIds(ws: Workspace): Promise<number[]> {
  const dir = ws.path('out/pq');
  const manifest = JSON.parse(readFileSync(path.join(dir, '_sluice_manifest.json'), 'utf8')) as {
    units: Record<string, { files: string[] }>;
  };
  const files = [...new Set(Object.values(manifest.units).flatMap((u) => u.files))].map((f) => path.join(dir, f));
  const instance = await DuckDBInstance.create(':memory:');
  const conn = await instance.connect();
  try {
    const list = files.map((f) => `'${f.replace(/'/g, "''")}'`).join(', ');
    const r = await conn.runAndReadAll(`SELECT id FROM read_parquet([${list}]) ORDER BY id`);
    return r.getRows().map(([id]) => Number(id));
  } finally {
    conn.closeSync();
    instance.closeSync();
  }
}

interface StoredLetter {
  unit: string;
  stage: string;
  offset?: number;
  reason: string;
  raw?: string;
  step?: number;
  run: string;
}

function letterFile(ws: Workspace): string {
  return ws.path('.sluice/dl/dead-letters.jsonl');
}

function storedLetters(ws: Workspace): StoredLetter[] {
  return readFileSync(letterFile(ws), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as StoredLetter);
}

/** The user's fix of the broken records: each decode letter's `raw` completed with its closing brace (once). */
function repairDecodeLetters(ws: Workspace): void {
  const fixed = storedLetters(ws).map((d) => (d.stage.endsWith('decode') ? { ...d, raw: `${d.raw}}` } : d));
  writeFileSync(letterFile(ws), fixed.map((d) => JSON.stringify(d) + '\n').join(''));
}

/** What every test expects in the end: each id once; the cast ones as 2.5 (double), the others their own n. */
const expectedRows = (): [number, number][] =>
  allIds.map((id) => [id, id % 100 === 3 || id % 100 === 5 ? 2.5 : id % 100] as [number, number]);

describe('dead letters: listed, then replayed exactly once after a fix', () => {
  it('lists unit, stage, offset and reason; the replay loads the fixed records once; a second replay adds nothing', async () => {
    const { ws, file } = setup();
    const first = await runIt(file);
    expect(first.stdout.join('\n')).toMatch(/^ {2}dead letters 9\b/m);
    expect((await tableRows(ws)).map(([id]) => id)).toEqual(allIds.filter((id) => ![3, 5, 6].includes(id % 100)));

    const letters = storedLetters(ws);
    expect(letters.map((d) => [path.basename(d.unit.split(':')[1]!), d.stage, d.step ?? null]).sort()).toEqual(
      [
        ...FILES.map((f) => [`${f}.jsonl`, 'decode', null]),
        ...FILES.flatMap((f) => [
          [`${f}.jsonl`, 'transform:cast', 2],
          [`${f}.jsonl`, 'transform:cast', 2],
        ]),
      ].sort(),
    );
    // A decode letter's offset is the line's byte offset in its file; the raw text is the line.
    const lineSix = inputFile(0).split('\n')[5]!;
    const decodeA = letters.find((d) => d.stage === 'decode' && d.unit.includes('a.jsonl'))!;
    expect(decodeA.offset).toBe(inputFile(0).indexOf(lineSix));
    expect(decodeA.raw).toBe(lineSix);
    // A transform letter holds the record as that transform saw it (after select and rename).
    expect(JSON.parse(letters.find((d) => d.stage === 'transform:cast')!.raw!)).toEqual({ id: 3, n: '2.5' });

    const list = await ok(['dead-letters', file]);
    expect(list.stdout[0]).toBe('9 dead letters not yet replayed (dl)');
    expect(list.stdout).toContainEqual(
      expect.stringMatching(
        new RegExp(`^\\S+ file:.*a\\.jsonl:\\d+:\\d+ decode @${decodeA.offset}: line is not valid JSON: .+$`),
      ),
    );
    expect(list.stdout).toContainEqual(
      expect.stringMatching(/^\S+ file:.*a\.jsonl:\d+:\d+ transform:cast: field `n`: cannot cast "2\.5" to int$/),
    );

    // The fix: the cast takes decimals now (pipeline), the cut lines are completed (the letters' raw).
    writeFileSync(file, pipeline({ cast: 'double' }));
    repairDecodeLetters(ws);
    const replayed = await replay(file);
    expect(replayed.stdout).toContain('  replayed     9');
    expect(replayed.stdout.join('\n')).toMatch(/^ {2}dead letters 0\b/m);
    expect(await tableRows(ws)).toEqual(expectedRows());
    expect(jsonlIds(ws)).toEqual(allIds);
    expect((await ok(['dead-letters', file])).stdout).toEqual(['0 dead letters not yet replayed (dl)']);

    const again = await ok(['dead-letters', file, '--replay', '--no-progress']);
    expect(again.stdout).toEqual(['no dead letters to replay']);
    expect(await tableRows(ws)).toEqual(expectedRows());
    expect(jsonlIds(ws)).toEqual(allIds);
  });

  it('a record still broken on replay becomes a dead letter of the replay, listed and replayable later', async () => {
    const { ws, file } = setup();
    await runIt(file);
    writeFileSync(file, pipeline({ cast: 'double' }));
    const replayed = await replay(file);
    // The three cut lines were not repaired: they are rejected again.
    expect(replayed.stdout.join('\n')).toMatch(/^ {2}dead letters 3\b/m);
    const list = await ok(['dead-letters', file]);
    expect(list.stdout[0]).toBe('3 dead letters not yet replayed (dl)');
    const entries = list.stdout.slice(1).filter((l) => !l.startsWith(' '));
    expect(entries).toHaveLength(3);
    for (const l of entries) expect(l).toMatch(/ replay:decode @\d+: still invalid on replay: /);
    repairDecodeLetters(ws);
    await replay(file);
    expect(await tableRows(ws)).toEqual(expectedRows());
    expect(jsonlIds(ws)).toEqual(allIds);
  });

  it.each([
    ['after its first unit committed', 1],
    ['after its last unit committed, before the letters were marked replayed', 6],
  ])('a replay that crashed %s, run again, loads each record once', async (_when, crashAt) => {
    const { ws, file } = setup();
    await runIt(file);
    writeFileSync(file, pipeline({ cast: 'double' }));
    repairDecodeLetters(ws);

    let commits = 0;
    const p = await loadPipeline(file, {});
    const crashed = replayDeadLetters(
      p,
      { fresh: false, logFormat: 'text', quiet: true, progress: false },
      {
        log: silentLogger,
        afterCommit: () => {
          if (++commits === crashAt) throw new Error('simulated crash');
        },
      },
    );
    await expect(crashed).rejects.toThrow('simulated crash');
    expect(commits).toBe(crashAt);
    // Part (or all) of the letters are in: none marked replayed yet, so all are still listed.
    const rows = (await tableRows(ws)).length;
    expect(rows).toBeGreaterThan(allIds.length - 9);
    expect((await ok(['dead-letters', file])).stdout[0]).toBe('9 dead letters not yet replayed (dl)');

    const rerun = await replay(file);
    expect(rerun.stdout).toContain('  replayed     9');
    expect(await tableRows(ws)).toEqual(expectedRows());
    expect(jsonlIds(ws)).toEqual(allIds);
    expect((await ok(['dead-letters', file, '--replay'])).stdout).toEqual(['no dead letters to replay']);
    expect(await tableRows(ws)).toEqual(expectedRows());
  });

  it('a replay that crashed after it completed, before the letters were marked replayed, loads nothing twice', async () => {
    const { ws, file } = setup();
    await runIt(file);
    writeFileSync(file, pipeline({ cast: 'double' }));
    repairDecodeLetters(ws);
    // What the disk holds in that instant: the replay's run complete, its letters not yet marked, still pending.
    const pendingFile = ws.path('.sluice/dl/replay/pending.json');
    const markedFile = ws.path('.sluice/dl/dead-letters.replayed.json');
    let pending = '';
    const p = await loadPipeline(file, {});
    await replayDeadLetters(
      p,
      { fresh: false, logFormat: 'text', quiet: true, progress: false },
      { log: silentLogger, afterCommit: () => void (pending = readFileSync(pendingFile, 'utf8')) },
    );
    expect(await tableRows(ws)).toEqual(expectedRows());
    writeFileSync(pendingFile, pending);
    writeFileSync(markedFile, '[]');

    const rerun = await replay(file);
    expect(rerun.stdout).toContain('  replayed     9');
    expect(rerun.stdout).toContain('  units        6/6 (6 already committed, 0 failed)');
    expect(await tableRows(ws)).toEqual(expectedRows());
    expect(jsonlIds(ws)).toEqual(allIds);
    expect((await ok(['dead-letters', file])).stdout).toEqual(['0 dead letters not yet replayed (dl)']);
  });

  it('write: replace sinks get the replayed records added to the last run’s table and generation', async () => {
    const { ws, file } = setup(pipeline({ write: 'replace', parquet: true }));
    await runIt(file);
    const loaded = allIds.filter((id) => ![3, 5, 6].includes(id % 100));
    expect((await tableRows(ws)).map(([id]) => id)).toEqual(loaded);
    expect(jsonlIds(ws)).toEqual(loaded);
    expect(await parquetIds(ws)).toEqual(loaded);

    writeFileSync(file, pipeline({ write: 'replace', cast: 'double', parquet: true }));
    repairDecodeLetters(ws);
    await replay(file);
    // Not a new generation holding only the 9 replayed records: the old rows and the replayed ones together.
    expect(await tableRows(ws)).toEqual(expectedRows());
    expect(jsonlIds(ws)).toEqual(allIds);
    expect(await parquetIds(ws)).toEqual(allIds);

    // The next run replaces everything with its own result: nothing doubled. The lines still cut short in the
    // input are its own dead letters again, replayed into its table in turn.
    await runIt(file);
    const whole = allIds.filter((id) => id % 100 !== 6);
    expect((await tableRows(ws)).map(([id]) => id)).toEqual(whole);
    expect(jsonlIds(ws)).toEqual(whole);
    expect(await parquetIds(ws)).toEqual(whole);
    repairDecodeLetters(ws);
    expect((await replay(file)).stdout).toContain('  replayed     3');
    expect(await tableRows(ws)).toEqual(expectedRows());
    expect(jsonlIds(ws)).toEqual(allIds);
    expect(await parquetIds(ws)).toEqual(allIds);
  });

  it('write: replace: records still broken on replay are replayed into the same run’s table once repaired', async () => {
    const { ws, file } = setup(pipeline({ write: 'replace' }));
    await runIt(file);
    writeFileSync(file, pipeline({ write: 'replace', cast: 'double' }));
    expect((await replay(file)).stdout.join('\n')).toMatch(/^ {2}dead letters 3\b/m);
    repairDecodeLetters(ws);
    const r = await replay(file);
    expect(r.stdout).toContain('  replayed     3');
    expect(r.stderr).toEqual([]);
    expect(await tableRows(ws)).toEqual(expectedRows());
    expect(jsonlIds(ws)).toEqual(allIds);
  });

  it('write: replace: letters of a run whose output a later run replaced are not replayed', async () => {
    const { ws, file } = setup(pipeline({ write: 'replace' }));
    await runIt(file);
    // A second run: its own letters supersede the first run's (whose table is gone).
    await runIt(file);
    expect(storedLetters(ws)).toHaveLength(18);
    writeFileSync(file, pipeline({ write: 'replace', cast: 'double' }));
    repairDecodeLetters(ws);
    const r = await replay(file);
    expect(r.stdout).toContain('  replayed     9');
    expect(r.stderr).toContain(
      'warn: 9 dead letters of earlier runs not replayed: a later run replaced their output (`write: replace`)',
    );
    expect(await tableRows(ws)).toEqual(expectedRows());
  });

  it('is refused while the last run has not finished', async () => {
    const { file } = setup();
    // A run stopped by its failure budget (the inputs' bad lines are over `max_dead_letters: 0`) has not finished.
    writeFileSync(file, `${pipeline()}max_dead_letters: 0\n`);
    const failed = await cli(['run', file, '--no-progress', '--quiet'], {});
    expect(failed.code).toBe(4);
    const r = await cli(['dead-letters', file, '--replay', '--no-progress'], {});
    expect(r.code).toBe(1);
    expect(r.stderr.at(-2)).toMatch(/^error: the last run of dl \(\S+\) has not finished$/);
    expect(r.stderr.at(-1)).toMatch(/^ {2}fix: finish it first \(`sluice run .*p\.yaml` resumes it\), then replay/);
  });

  it('is refused when the transform that rejected the letters is no longer where it was', async () => {
    const { file } = setup();
    await runIt(file);
    writeFileSync(file, pipeline({ select: false, cast: 'double' }));
    const r = await cli(['dead-letters', file, '--replay', '--no-progress'], {});
    expect(r.code).toBe(1);
    expect(r.stderr.at(-2)).toBe(
      'error: dead letters of transforms[2] (cast) cannot be replayed: transforms[2] is now gone',
    );
    expect(r.stderr.at(-1)).toMatch(/^ {2}fix: a letter re-enters the pipeline at the transform that rejected it/);
  });
});
