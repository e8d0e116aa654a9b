/**
 * kill -9 at each failpoint of each sink target's commit path (the target table's `failpoints`), then a rerun equal
 * to a clean run: the crash matrix's machinery (bench/lib/sluice-child.ts: the real CLI in a child process, dying by
 * SIGKILL where the failpoint strikes) driven from the registry's targets.
 *
 * A cell: a snapshot of the emulator (three parts, two read at a time; each unit published as it commits) into one
 * output of the target, killed mid-run. Right after the kill a reader sees nothing twice and nothing a full load
 * would not hold — for `replace`, exactly the output of the earlier complete run or all of the new one (the clock
 * moved between them, so the two differ). One rerun in this process then gives the full load, the filter job paid
 * once over the killed run and its rerun, and nothing left in temp or staging areas.
 *
 * `npm test` strikes the first failpoint of one target per sink kind's `append` list (an S3 one among them) and of
 * one local `replace` list (the soak kills every target at its `append` failpoints in turn besides); `SLUICE_CRASH_MATRIX=full` (CI) strikes every one, and
 * the `append` ones again under `write: merge` where the sink's config accepts it.
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  DAY,
  NIGHT_1,
  output,
  relocate,
  runKilled,
  runOk,
  scenarioDir,
  useService,
  writePipeline,
  type Service,
} from './harness.js';
import { SIZE, snapshot } from './nightly.js';
import { duplicates } from './read.js';
import { sinkDefs } from '../../../sinks/index.js';
import { TARGETS, useServers, type CommitFailpoint, type Output, type SinkOptions, type Target } from './targets.js';

const FULL = process.env.SLUICE_CRASH_MATRIX === 'full';
/**
 * The cells `npm test` strikes: DuckDB, Postgres, a file sink on S3, a Parquet replace swap, ClickHouse between its
 * ATTACH and its state row (the soak kills the rest).
 */
const QUICK: readonly [string, 'append' | 'replace'][] = [
  ['duckdb', 'append'],
  ['postgres', 'append'],
  ['jsonl-s3', 'append'],
  ['parquet', 'replace'],
  ['clickhouse', 'append'],
];

const servers = useServers();
const service = useService({ size: SIZE });

/** A full load, every run: the cell is about the commit, not the cursor. */
const SOURCE = { ...snapshot.source, incremental: undefined };

interface Cell {
  target: Target;
  mode: 'append' | 'merge' | 'replace';
  failpoint: CommitFailpoint;
}

/** Whether the sink's own config schema (the registry's) accepts `write: merge`. */
function merges(target: Target): boolean {
  const def = sinkDefs.find((d) => d.type === target.type)!;
  // A probe's config only: an S3 target names its server's endpoint, never contacted here.
  const servers = { s3: { endpoint: 'http://127.0.0.1:9' } } as unknown as Output['servers'];
  return def.schema.safeParse(target.sink({ dir: '.', name: 'probe', servers }, MERGE)).success;
}

const MERGE: SinkOptions = { write: 'merge', primary_key: [snapshot.key] };

function cells(): Cell[] {
  return TARGETS.flatMap((target) =>
    (['append', 'merge', 'replace'] as const).flatMap((mode) => {
      if (mode === 'merge' && !(FULL && merges(target))) return [];
      const list = target.failpoints[mode === 'replace' ? 'replace' : 'append'];
      const quick = QUICK.some(([name, m]) => name === target.name && m === mode) ? list.slice(0, 1) : [];
      return (FULL ? list : quick).map((failpoint) => ({ target, mode, failpoint }));
    }),
  );
}

describe('sink conformance: kill -9 in the commit path, then a rerun equal to a clean run', () => {
  for (const cell of cells())
    it(`${cell.target.name} ${cell.mode} killed at ${cell.failpoint}`, { timeout: 180_000 }, () =>
      crashCell(cell, service),
    );
});

async function crashCell({ target, mode, failpoint }: Cell, svc: Service): Promise<void> {
  let dir = scenarioDir(`crash-${target.name}`);
  const name = output(dir, target, servers, `crash_${mode}`).name;
  const out = (): Output => ({ dir, name, servers });
  writePipeline(dir, svc, {
    name: 'crash',
    source: SOURCE,
    sinks: [target.sink(out(), { ...(mode === 'merge' ? MERGE : { write: mode }), publishEachUnit: true })],
  });
  const file = (): string => path.join(dir, 'crash.yaml');
  const earlier = NIGHT_1;
  const now = NIGHT_1 + 2 * DAY;
  let before: string[] | undefined;
  if (mode === 'replace') {
    // The complete run whose output readers keep seeing until the new one is swapped in.
    await svc.clock(earlier);
    await runOk(file());
    before = snapshot.fullLoad(earlier, dir);
    expect(snapshot.loaded(await target.rows(out()))).toEqual(before);
    dir = relocate(dir); // the killed run is a child: what this process opened, it could not
  }
  await svc.clock(now);
  const full = snapshot.fullLoad(now, dir);
  const paidBefore = (await svc.counters()).paid.filter ?? 0;

  const killed = await runKilled(file(), failpoint);
  expect(killed.died, `${killed.endedAs}\n${killed.stderr}`).toBe(true);
  const seen = snapshot.loaded(await target.rows(out()));
  if (before) {
    // The old output or all of the new one, never a mix or a part.
    expect([before, full], `${seen.length} rows visible`).toContainEqual(seen);
  } else {
    expect(duplicates(seen)).toEqual([]);
    const all = new Set(full);
    expect(seen.filter((r) => !all.has(r))).toEqual([]);
    expect(seen.length).toBeLessThan(full.length);
    // A transactional store holds exactly the rows of the units it committed.
    if (target.committedRecords) expect(seen.length).toBe(await target.committedRecords(out(), 'crash'));
  }

  await runOk(file());
  expect(snapshot.loaded(await target.rows(out()))).toEqual(full);
  expect(((await svc.counters()).paid.filter ?? 0) - paidBefore, 'filter jobs').toBe(1);
  expect(await target.leftovers(out())).toEqual([]);
}
