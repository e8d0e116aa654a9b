/**
 * Where the next run starts, read outside a run (`sluice state`, `sluice report`, `sluice plan`): real sinks (JSONL,
 * DuckDB) in a temp dir, opened by the runtime under the pipeline's and the outputs' locks. Whatever fails — a sink's
 * open, a checkpoint read — every sink it opened is closed and every lock released; a held run lock fails it before
 * anything is opened. Then its callers through the CLI in-process: what each makes of a held lock, and the first
 * plan that must not create the outputs.
 */
import { existsSync } from 'node:fs';
import { mkdir, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { knownCheckpoint } from '../../src/core/checkpoint.js';
import { runCli } from '../../src/cli/cli.js';
import type { WorkUnit } from '../../src/core/types.js';
import { LockedError, acquireRunLock } from '../../src/state/run-lock.js';
import { readState } from '../../src/operations/state.js';
import { loadPipeline } from '../../src/pipeline/load.js';
import { duckdbSinkSchema } from '../../sinks/duckdb/config.js';
import { DuckDBDatabase } from '../../sinks/duckdb/database.js';
import { DuckDBSink } from '../../sinks/duckdb/sink.js';
import { jsonlSinkSchema } from '../../sinks/jsonl/config.js';
import { JsonlSink } from '../../sinks/jsonl/sink.js';
import { memoryIo } from '../cli/memory-io.js';
import { batches, removeTempDirs, sinkContext, tempDir } from '../sinks/helpers.js';

afterAll(removeTempDirs);

const PIPELINE = 'nightly';
let dir: string;
let lockFile: string;

beforeEach(async () => {
  dir = await tempDir();
  lockFile = path.join(dir, '.sluice', PIPELINE, 'run.lock');
});

const jsonlSink = (): JsonlSink => new JsonlSink(jsonlSinkSchema.parse({ type: 'jsonl', path: 'out' }));
const duckdbSink = (file = 'w.duckdb'): DuckDBSink =>
  new DuckDBSink(duckdbSinkSchema.parse({ type: 'duckdb', path: file, table: 't' }));

/** Each sink's committed checkpoints, by sink unit id, as `sluice state` reads them (sinks: `w.duckdb`-like files). */
async function readCheckpoints(duckdbFiles: string[]): Promise<Map<string, unknown>[]> {
  const file = path.join(dir, `${PIPELINE}.yaml`);
  const sinks = [{ type: 'jsonl', path: 'out' }, ...duckdbFiles.map((f) => ({ type: 'duckdb', path: f, table: 't' }))];
  await writeFile(
    file,
    JSON.stringify({ version: 1, name: PIPELINE, source: { type: 'file', paths: ['in'], format: 'jsonl' }, sinks }),
  );
  await mkdir(path.join(dir, 'in'), { recursive: true });
  const pipeline = await loadPipeline(file, {});
  const state = await readState({ pipeline, log: sinkContext(dir).log, command: 'sluice state nightly.yaml' });
  return state.sinks.map((s) => new Map(s.checkpoints.map((c) => [`${c.run}/${c.unit}`, c.checkpoint])));
}

/** Units committed with their checkpoints, as a run of the pipeline leaves them. */
async function commit(sink: JsonlSink | DuckDBSink, seqs: number[]): Promise<void> {
  await sink.open(sinkContext(dir, { pipeline: PIPELINE, fresh: false }));
  try {
    for (const seq of seqs) {
      const unit: WorkUnit = { id: `run1/u${seq}`, params: {} };
      await sink.writeUnit(unit, batches([{ id: seq }]), knownCheckpoint({ seq }));
    }
    await sink.finish?.();
  } finally {
    await sink.close();
  }
}

/** SQL on a sink's DuckDB file, through the same process-wide handle the sink opens it with. */
async function sql(file: string, text: string): Promise<void> {
  const db = await DuckDBDatabase.acquire(path.join(dir, file), 'test');
  const conn = await db.connect();
  try {
    await conn.run(text);
  } finally {
    conn.closeSync();
    await db.release();
  }
}

/** Nothing is left held: the run lock and the JSONL output's lock can be taken, the sinks were closed. */
async function expectClosedAndReleased(duckdbFile?: string): Promise<void> {
  const log = sinkContext(dir).log;
  for (const file of [lockFile, path.join(dir, 'out', '.sluice-lock')])
    await (await acquireRunLock(file, { command: 'next run', log, waitMs: 0 })).release();
  if (duckdbFile === undefined) return;
  // An unclosed DuckDB sink keeps its table claimed: a second sink on it would fail to open.
  const again = duckdbSink(duckdbFile);
  await again.open(sinkContext(dir, { pipeline: PIPELINE, fresh: false }));
  await again.close();
}

describe('reading where the next run starts', () => {
  it("returns each sink's committed checkpoints in sink order, and closes and releases after", async () => {
    await commit(jsonlSink(), [1]);
    await commit(duckdbSink(), [1, 2]);
    const perSink = await readCheckpoints(['w.duckdb']);
    expect(perSink).toEqual([
      new Map([['run1/u1', { seq: 1 }]]),
      new Map([
        ['run1/u1', { seq: 1 }],
        ['run1/u2', { seq: 2 }],
      ]),
    ]);
    await expectClosedAndReleased('w.duckdb');
  });

  it('closes the sinks it opened and releases the locks when a sink fails to open', async () => {
    await writeFile(path.join(dir, 'broken.duckdb'), 'not a duckdb database, but in the way of one\n'.repeat(200));
    const err = await readCheckpoints(['w.duckdb', 'broken.duckdb']).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toContain('broken.duckdb');
    await expectClosedAndReleased('w.duckdb');
  });

  it('closes every sink and releases the locks when a checkpoint cannot be read', async () => {
    await commit(duckdbSink(), [1]);
    // A checkpoint that is no longer JSON: the sink opens, its checkpoint read fails.
    await sql(
      'w.duckdb',
      `ALTER TABLE _sluice_state ALTER checkpoint TYPE VARCHAR; UPDATE _sluice_state SET checkpoint = '{"seq": 1'`,
    );
    await expect(readCheckpoints(['w.duckdb'])).rejects.toThrow(SyntaxError);
    await expectClosedAndReleased('w.duckdb');
  });

  it('fails on a held run lock without taking the outputs’ locks or opening a sink', async () => {
    await mkdir(path.dirname(lockFile), { recursive: true });
    const run = await acquireRunLock(lockFile, { command: 'sluice run nightly.yaml', log: sinkContext(dir).log });
    try {
      const err = await readCheckpoints(['w.duckdb']).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(LockedError);
      expect((err as Error).message).toContain('sluice run nightly.yaml');
    } finally {
      await run.release();
    }
    // The JSONL output's directory (where its lock goes) and the DuckDB file were never made.
    expect(existsSync(path.join(dir, 'out'))).toBe(false);
    expect(existsSync(path.join(dir, 'w.duckdb'))).toBe(false);
  });
});

describe('its callers: `sluice plan` and `sluice state`', () => {
  const cli = async (...args: string[]): Promise<{ code: number; out: string; err: string }> => {
    const io = memoryIo({});
    const code = await runCli(args, io);
    return { code, out: io.stdout.join('\n'), err: io.stderr.join('\n') };
  };

  it('plan reads no cursor on a first plan, and the initial one (with a note) while a run holds the lock; state exits 3', async () => {
    await mkdir(path.join(dir, 'in'));
    const input = path.join(dir, 'in', 'a.jsonl');
    await writeFile(input, '{"id":1}\n');
    // A fixed mtime: the file's fingerprint never depends on the clock's resolution.
    await utimes(input, 1_700_000_000, 1_700_000_000);
    const file = path.join(dir, 'p.yaml');
    await writeFile(
      file,
      `version: 1\nname: ${PIPELINE}\nsource: { type: file, paths: [in], format: jsonl }\n` +
        'sink: { type: duckdb, path: w.duckdb, table: t }\n',
    );
    const plan = async (): Promise<string> => {
      const r = await cli('plan', file);
      expect(r.code, r.err).toBe(0);
      return r.out;
    };

    // A first plan does not create the outputs just to find no cursor in them.
    expect(await plan()).toMatch(/^units: 1$/m);
    expect(existsSync(path.join(dir, 'w.duckdb'))).toBe(false);

    const ran = await cli('run', file, '--no-progress', '--quiet');
    expect(ran.code, ran.err).toBe(0);
    const after = await plan();
    expect(after).toMatch(/^units: 0$/m);
    expect(after).not.toContain('could not be read');

    const run = await acquireRunLock(lockFile, { command: 'sluice run p.yaml', log: sinkContext(dir).log });
    try {
      const locked = await plan();
      expect(locked).toMatch(/^units: 1$/m);
      expect(locked).toMatch(
        /^ {2}the cursor could not be read from the sinks \(.*run\.lock is locked by pid \d+ .*\(sluice run p\.yaml\).*\): the plan shows the initial cursor$/m,
      );
      const state = await cli('state', file);
      expect(state.code).toBe(3);
      expect(state.err).toContain('(sluice run p.yaml)');
    } finally {
      await run.release();
    }
    // Neither left a lock behind: state reads the cursor the run committed.
    const state = await cli('state', file);
    expect(state.code, state.err).toBe(0);
    expect(state.out).toMatch(/next run skips: 1 unit\(s\) committed by every sink/);
  });
});
