/**
 * What every sink target does with the rows of two days of local files, driven through the engine: the write
 * dispositions, lineage columns, dead-letter replay, the schema contract modes and shards. Each scenario is one
 * pipeline whose sinks are every target (as a deployment loads several at once), each target judged on its own.
 *
 * - writes: per target, `append` with `lineage: true`, `merge` on `id` (where the sink's config accepts it; where
 *   not, the registry refuses it) and `replace`. Every run loads every file. Day 1 has a line that is not JSON (a
 *   dead letter); day 2 adds a file that changes two rows, adds two and a column. The user then repairs the letter
 *   and replays it, twice: it lands once in every sink (in `replace`, in the live generation).
 * - replace with an incremental source: the source loads everything for a `replace` sink, so the new table is a
 *   full load and not only what changed.
 * - contracts: per target, a sink per mode; day 2 brings a new column and a value of a new type. `evolve` takes
 *   both, `discard_row` dead-letters the rows, `discard_value` the values, and `freeze` fails its unit (exit code 5)
 *   while the other sinks commit theirs.
 * - shards: two shards (`--shard 0/2`, `1/2`) of one pipeline into one output per target hold every row once.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { EXIT_CODES, SluiceError } from '../../../src/core/errors.js';
import { countRows, firstRows, withOutputs, writtenColumns } from '../../../src/operations/outputs.js';
import { replayDeadLetters } from '../../../src/operations/replay.js';
import { LOADED_AT_COLUMN, RUN_ID_COLUMN } from '../../../src/schema/lineage.js';
import { silentLogger } from '../../../src/runtime/logger.js';
import { loadPipeline } from '../../../src/pipeline/load.js';
import { sinkDefs } from '../../../sinks/index.js';
import { API_KEY, output, runHere, runOk, scenarioDir, writePipeline } from './harness.js';
import type { Obj } from './read.js';
import { TARGETS, useServers, type Output, type SinkOptions, type Target } from './targets.js';

const servers = useServers();

/** Whether the sink's own config schema (the registry's) accepts `opts`: capabilities as the sink declares them. */
function accepts(target: Target, o: Output, opts: SinkOptions): boolean {
  const def = sinkDefs.find((d) => d.type === target.type)!;
  return def.schema.safeParse(target.sink(o, opts)).success;
}

function writeLines(dir: string, name: string, lines: (Obj | string)[]): void {
  mkdirSync(path.join(dir, 'in'), { recursive: true });
  writeFileSync(
    path.join(dir, 'in', name),
    lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l)) + '\n').join(''),
  );
}

/** Rows as `id:v` (sorted), the columns a test looks at. */
function idsAndValues(rows: readonly Obj[]): string[] {
  return rows.map((r) => `${r.id as number}:${r.v === undefined ? '-' : String(r.v)}`).sort();
}

const replayOpts = { fresh: false, logFormat: 'text', quiet: true, progress: false } as const;
const MERGE: SinkOptions = { write: 'merge', primary_key: ['id'] };
const FILES = { type: 'file', paths: ['in'], format: 'jsonl', concurrency: 1 };

describe('sink conformance: write dispositions, lineage, dead-letter replay, contracts, shards', () => {
  it('append (with lineage), merge and replace over two days; a repaired letter replays once', async () => {
    const dir = scenarioDir('writes');
    const outs = TARGETS.map((t) => ({
      target: t,
      appended: output(dir, t, servers, 'append'),
      merged: output(dir, t, servers, 'merge'),
      replaced: output(dir, t, servers, 'replace'),
    }));
    const merging = outs.filter((o) => accepts(o.target, o.merged, MERGE));
    expect(merging.length).toBeGreaterThan(0);
    for (const o of outs.filter((x) => !merging.includes(x))) {
      // The sink says so itself: its config refuses `merge`, and so does a pipeline that asks for it.
      const p = writePipeline(dir, undefined, {
        name: `merge_refused_${o.target.name.replace('-', '_')}`,
        source: FILES,
        sinks: [o.target.sink(o.merged, MERGE)],
      });
      await expect(loadPipeline(p, { SLUICE_API_KEY: API_KEY }), o.target.name).rejects.toThrow(/write/);
    }
    const file = writePipeline(dir, undefined, {
      name: 'writes',
      // Every run loads every file: what `replace` needs, and what makes `append` keep each run's rows.
      source: { ...FILES, incremental: false },
      sinks: outs.flatMap((o) => [
        o.target.sink(o.appended, { lineage: true }),
        ...(merging.includes(o) ? [o.target.sink(o.merged, MERGE)] : []),
        o.target.sink(o.replaced, { write: 'replace' }),
      ]),
    });

    writeLines(dir, 'a.jsonl', [
      { id: 1, v: 1 },
      { id: 2, v: 2 },
      '{"id": 7, "v": oops',
      { id: 3, v: 3 },
      { id: 4, v: 4 },
    ]);
    expect((await runOk(file)).deadLetters).toBe(1);
    // Day 2: the same file again (its line that is not JSON too), and a file that changes two rows and adds two.
    writeLines(dir, 'b.jsonl', [
      { id: 3, v: 33, extra: 'x' },
      { id: 4, v: 44 },
      { id: 5, v: 5 },
      { id: 6, v: 6 },
    ]);
    expect((await runOk(file)).deadLetters).toBe(1);

    // The user repairs the line in the dead-letter file, then replays it: twice, the second adds nothing. Day 1's
    // letter went with the output `replace` replaced: only the last run's is replayed.
    const letters = path.join(dir, '.sluice', 'writes', 'dead-letters.jsonl');
    const repaired = readFileSync(letters, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => {
        const letter = JSON.parse(l) as { raw?: string };
        return JSON.stringify({ ...letter, raw: letter.raw?.replace('oops', '7}') });
      });
    writeFileSync(letters, repaired.join('\n') + '\n');
    const p = await loadPipeline(file, { SLUICE_API_KEY: API_KEY });
    const first = await replayDeadLetters(p, replayOpts, { log: silentLogger });
    expect([first.replayed, first.superseded]).toEqual([1, 1]);
    expect((await replayDeadLetters(p, replayOpts, { log: silentLogger })).replayed).toBe(0);

    const day1 = ['1:1', '2:2', '3:3', '4:4'];
    const day2 = [...day1, '3:33', '4:44', '5:5', '6:6'];
    for (const o of outs) {
      const name = o.target.name;
      const appendRows = await o.target.rows(o.appended);
      expect.soft(idsAndValues(appendRows), name).toEqual([...day1, ...day2, '7:7'].sort());
      expect.soft(appendRows.find((r) => r.id === 3 && String(r.v) === '33')?.extra, name).toBe('x');
      // Lineage: each row names the run that loaded it (day 1, day 2, the replay) and when its unit was loaded.
      const runsOf = (id: number): string[] =>
        [...new Set(appendRows.filter((r) => r.id === id).map((r) => r[RUN_ID_COLUMN] as string))].sort();
      expect.soft(runsOf(1), name).toHaveLength(2);
      expect.soft(runsOf(5), name).toEqual([runsOf(1)[1]]);
      expect.soft(runsOf(7), name).toEqual([expect.stringMatching(/^replay-/)]);
      expect
        .soft(
          appendRows.filter((r) => Number.isNaN(Date.parse(String(r[LOADED_AT_COLUMN])))),
          name,
        )
        .toEqual([]);
      // Within a run the files load in order: b's rows are the last word on ids 3 and 4.
      if (merging.includes(o))
        expect
          .soft(idsAndValues(await o.target.rows(o.merged)), name)
          .toEqual(['1:1', '2:2', '3:33', '4:44', '5:5', '6:6', '7:7']);
      // `replace`: the last run's rows, and the letter replayed into them.
      expect.soft(idsAndValues(await o.target.rows(o.replaced)), name).toEqual([...day2, '7:7'].sort());
    }

    // What `--show`, `sluice schema` and `sluice report` read back (operations/outputs.ts, each sink's
    // `outputQuery`): every output's rows as the target's own reader finds them, its count, its columns.
    const written = outs.flatMap((o) => [
      { target: o.target, output: o.appended },
      ...(merging.includes(o) ? [{ target: o.target, output: o.merged }] : []),
      { target: o.target, output: o.replaced },
    ]);
    await withOutputs(p, { log: silentLogger, command: 'show' }, async (sinks) => {
      expect(sinks).toHaveLength(written.length);
      for (const [i, sink] of sinks.entries()) {
        const { target, output: out } = written[i]!;
        const label = `${target.name}: ${sink.describe()}`;
        if (target.needs.includes('s3')) {
          // Not read back here, and said so (DuckDB would download httpfs and know no endpoint or credentials).
          await expect(firstRows(sink, 1), label).rejects.toThrow(/an s3:\/\/ output is not read back here/);
          continue;
        }
        const shown = await firstRows(sink, 1000);
        expect.soft(idsAndValues(shown), label).toEqual(idsAndValues(await target.rows(out)));
        expect.soft(await countRows(sink), label).toBe(shown.length);
        const columns = (await writtenColumns(sink))?.map((c) => c.name);
        expect.soft(columns, label).toEqual(expect.arrayContaining(['id', 'v', 'extra']));
      }
    });
  });

  it('replace with an incremental source holds a full load after every run', async () => {
    // A `replace` sink keeps no cursor across its generations: the source loads everything, or the new table
    // would hold only what changed since the last run.
    const dir = scenarioDir('replace-cursor');
    const outs = TARGETS.map((t) => ({ target: t, out: output(dir, t, servers, 'replace_cursor') }));
    const file = writePipeline(dir, undefined, {
      name: 'replace_cursor',
      source: FILES,
      sinks: outs.map((o) => o.target.sink(o.out, { write: 'replace' })),
    });
    writeLines(dir, 'a.jsonl', [{ id: 1, v: 1 }]);
    await runOk(file);
    writeLines(dir, 'b.jsonl', [{ id: 2, v: 2 }]);
    await runOk(file);
    for (const o of outs) expect.soft(idsAndValues(await o.target.rows(o.out)), o.target.name).toEqual(['1:1', '2:2']);
  });

  it('evolve, discard_row, discard_value and freeze, each as the mode promises', async () => {
    const dir = scenarioDir('contracts');
    const modes = ['evolve', 'discard_row', 'discard_value', 'freeze'] as const;
    const outs = TARGETS.flatMap((t) => modes.map((mode) => ({ target: t, mode, out: output(dir, t, servers, mode) })));
    const file = writePipeline(dir, undefined, {
      name: 'contracts',
      source: FILES,
      // Published unit by unit: the run fails (freeze), and what the other sinks committed must be seen.
      sinks: outs.map((o) => o.target.sink(o.out, { schema_contract: o.mode, publishEachUnit: true })),
    });
    writeLines(dir, 'day1.jsonl', [
      { id: 1, v: 1 },
      { id: 2, v: 2 },
    ]);
    await runOk(file);
    // A new column on one row, a text where the column holds integers on another, a row that fits.
    writeLines(dir, 'day2.jsonl', [
      { id: 3, v: 3, extra: 'x' },
      { id: 4, v: 'four' },
      { id: 5, v: 5 },
    ]);
    const day2 = await runHere(file);
    expect(day2.error).toBeInstanceOf(SluiceError);
    expect((day2.error as SluiceError).exitCode).toBe(EXIT_CODES.schemaContract);
    expect(String(day2.error)).toMatch(/extra/);

    const expected: Record<(typeof modes)[number], string[]> = {
      evolve: ['1:1', '2:2', '3:3', '4:four', '5:5'],
      discard_row: ['1:1', '2:2', '5:5'],
      discard_value: ['1:1', '2:2', '3:3', '4:-', '5:5'],
      freeze: ['1:1', '2:2'],
    };
    for (const o of outs) {
      const label = `${o.target.name} ${o.mode}`;
      const rows = await o.target.rows(o.out);
      expect.soft(idsAndValues(rows), label).toEqual(expected[o.mode]);
      // `evolve` added the column; `discard_value` removed the value, and no other sink took it.
      expect.soft(rows.find((r) => r.id === 3)?.extra, label).toBe(o.mode === 'evolve' ? 'x' : undefined);
    }
    // Each refusal is a dead letter that names the column: two rows and two values per target.
    const letters = readFileSync(path.join(dir, '.sluice', 'contracts', 'dead-letters.jsonl'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { stage: string; reason: string });
    expect(letters).toHaveLength(4 * TARGETS.length);
    expect(letters.filter((l) => /extra/.test(l.reason))).toHaveLength(2 * TARGETS.length);
  });

  it('two shards of one pipeline into one output hold every row once', async () => {
    const dir = scenarioDir('shards');
    const outs = TARGETS.map((t) => ({ target: t, out: output(dir, t, servers, 'sharded') }));
    const file = writePipeline(dir, undefined, {
      name: 'sharded',
      source: FILES,
      sinks: outs.map((o) => o.target.sink(o.out)),
    });
    // Sixteen files: each shard gets some (a unit's shard is a hash of its id).
    for (let f = 0; f < 16; f++)
      writeLines(
        dir,
        `f${f}.jsonl`,
        [0, 1].map((k) => ({ id: f * 10 + k, v: f })),
      );
    // One after the other: in production each is a process (a machine) of its own, and a DuckDB file is one
    // process's at a time.
    const a = await runOk(file, { shard: { index: 0, count: 2 } });
    const b = await runOk(file, { shard: { index: 1, count: 2 } });
    expect(a.units.done).toBeGreaterThan(0);
    expect(b.units.done).toBeGreaterThan(0);
    expect(a.units.done + b.units.done).toBe(16);
    const all = Array.from({ length: 16 }, (_, f) => [f * 10, f * 10 + 1]).flat();
    for (const o of outs)
      expect
        .soft(
          (await o.target.rows(o.out)).map((r) => r.id as number).sort((x, y) => x - y),
          o.target.name,
        )
        .toEqual(all);
  });
});
