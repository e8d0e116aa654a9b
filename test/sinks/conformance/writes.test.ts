/**
 * What every sink target does with the rows of two days of local files, driven through the engine: the write
 * dispositions, lineage columns, dead-letter replay, the schema contract modes and shards.
 *
 * - writes: one pipeline, three sinks of the target — `append` with `lineage: true`, `merge` on `id` (where the
 *   sink's config accepts it; where not, the registry refuses it), `replace`. Day 1 has a line that is not JSON (a
 *   dead letter); day 2 changes two rows and adds two and a column. The user then repairs the letter and replays it,
 *   twice: it lands once in every sink (in `replace`, in the live generation).
 * - contracts: one pipeline, a sink of the target per mode; day 2 brings a new column and a value of a new type.
 *   `evolve` takes both, `discard_row` dead-letters the rows, `discard_value` the values, and `freeze` fails its
 *   unit (exit code 5) while the others commit theirs.
 * - shards: two shards (`--shard 0/2`, `1/2`) of one pipeline into one output hold every row once.
 */
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { EXIT_CODES, SluiceError } from '../../../src/core/errors.js';
import { replayDeadLetters } from '../../../src/engine/dead-letters.js';
import { LOADED_AT_COLUMN, RUN_ID_COLUMN } from '../../../src/engine/lineage.js';
import { silentLogger } from '../../../src/engine/logger.js';
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

describe('sink conformance: write dispositions, lineage and dead-letter replay', () => {
  for (const target of TARGETS)
    it(`${target.name}: append (with lineage), merge, replace over two days; a repaired letter replays once`, async () => {
      const dir = scenarioDir(`writes-${target.name}`);
      const appended = output(dir, target, servers, 'append');
      const merged = output(dir, target, servers, 'merge');
      const replaced = output(dir, target, servers, 'replace');
      const mergeOpts: SinkOptions = { write: 'merge', primary_key: ['id'] };
      const merges = accepts(target, merged, mergeOpts);
      const file = writePipeline(dir, undefined, {
        name: 'writes',
        // Every run loads every file: what `replace` needs, and what makes `append` keep each run's rows.
        source: { type: 'file', paths: ['in'], format: 'jsonl', concurrency: 1, incremental: false },
        sinks: [
          target.sink(appended, { lineage: true }),
          ...(merges ? [target.sink(merged, mergeOpts)] : []),
          target.sink(replaced, { write: 'replace' }),
        ],
      });
      if (!merges) {
        // The sink says so itself: its config refuses `merge`, and so does the pipeline.
        const p = writePipeline(dir, undefined, {
          name: 'merge_refused',
          source: { type: 'file', paths: ['in'], format: 'jsonl' },
          sinks: [target.sink(merged, mergeOpts)],
        });
        await expect(loadPipeline(p, { SLUICE_API_KEY: API_KEY })).rejects.toThrow(/write/);
      }

      writeLines(dir, 'a.jsonl', [
        { id: 1, v: 1 },
        { id: 2, v: 2 },
        '{"id": 7, "v": oops',
        { id: 3, v: 3 },
        { id: 4, v: 4 },
      ]);
      expect((await runOk(file)).deadLetters).toBe(1);
      // Day 2: the same file again (so its line that is not JSON too), and a file that changes two rows and adds two.
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

      const appendRows = await target.rows(appended);
      const day1 = ['1:1', '2:2', '3:3', '4:4'];
      const day2 = [...day1, '3:33', '4:44', '5:5', '6:6'];
      expect(idsAndValues(appendRows)).toEqual([...day1, ...day2, '7:7'].sort());
      expect(appendRows.find((r) => r.id === 3 && String(r.v) === '33')?.extra).toBe('x');
      // Lineage: each row names the run that loaded it (day 1, day 2, the replay) and when its unit was loaded.
      const runsOf = (id: number): string[] =>
        [...new Set(appendRows.filter((r) => r.id === id).map((r) => r[RUN_ID_COLUMN] as string))].sort();
      expect(runsOf(1)).toHaveLength(2);
      expect(runsOf(5)).toEqual([runsOf(1)[1]]);
      expect(runsOf(7)).toEqual([expect.stringMatching(/^replay-/)]);
      expect(appendRows.every((r) => !Number.isNaN(Date.parse(String(r[LOADED_AT_COLUMN]))))).toBe(true);
      // Within a run the files load in order: b's rows are the last word on ids 3 and 4.
      if (merges)
        expect(idsAndValues(await target.rows(merged))).toEqual(['1:1', '2:2', '3:33', '4:44', '5:5', '6:6', '7:7']);
      // `replace`: the last run's rows, and the letter replayed into them.
      expect(idsAndValues(await target.rows(replaced))).toEqual([...day2, '7:7'].sort());
    });

  for (const target of TARGETS)
    it(`${target.name}: replace with an incremental source holds a full load after every run`, async () => {
      // A `replace` sink keeps no cursor across its generations: the source loads everything, or the new table
      // would hold only what changed since the last run.
      const dir = scenarioDir(`replace-cursor-${target.name}`);
      const out = output(dir, target, servers, 'replace_cursor');
      const file = writePipeline(dir, undefined, {
        name: 'replace_cursor',
        source: { type: 'file', paths: ['in'], format: 'jsonl', concurrency: 1 },
        sinks: [target.sink(out, { write: 'replace' })],
      });
      writeLines(dir, 'a.jsonl', [{ id: 1, v: 1 }]);
      await runOk(file);
      writeLines(dir, 'b.jsonl', [{ id: 2, v: 2 }]);
      await runOk(file);
      expect(idsAndValues(await target.rows(out))).toEqual(['1:1', '2:2']);
    });
});

describe('sink conformance: schema contract modes', () => {
  for (const target of TARGETS)
    it(`${target.name}: evolve, discard_row, discard_value and freeze, each as the mode promises`, async () => {
      const dir = scenarioDir(`contracts-${target.name}`);
      const modes = ['evolve', 'discard_row', 'discard_value', 'freeze'] as const;
      const outs = new Map(modes.map((m) => [m, output(dir, target, servers, m)]));
      const file = writePipeline(dir, undefined, {
        name: 'contracts',
        source: { type: 'file', paths: ['in'], format: 'jsonl', concurrency: 1 },
        // Published unit by unit: the run fails (freeze), and what the other sinks committed must be seen.
        sinks: modes.map((m) => target.sink(outs.get(m)!, { schema_contract: m, publishEachUnit: true })),
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

      const rows = async (m: (typeof modes)[number]) => target.rows(outs.get(m)!);
      const evolved = await rows('evolve');
      expect(idsAndValues(evolved)).toEqual(['1:1', '2:2', '3:3', '4:four', '5:5']);
      expect(evolved.find((r) => r.id === 3)?.extra).toBe('x');
      expect(idsAndValues(await rows('discard_row'))).toEqual(['1:1', '2:2', '5:5']);
      const valued = await rows('discard_value');
      expect(idsAndValues(valued)).toEqual(['1:1', '2:2', '3:3', '4:-', '5:5']);
      expect(valued.some((r) => r.extra !== undefined)).toBe(false);
      expect(idsAndValues(await rows('freeze'))).toEqual(['1:1', '2:2']);
      // Each refusal is a dead letter that names the column.
      const letters = readFileSync(path.join(dir, '.sluice', 'contracts', 'dead-letters.jsonl'), 'utf8');
      expect(letters.match(/"stage":"[^"]*"/g)?.length).toBe(4);
      expect(letters).toMatch(/extra/);
    });
});

describe('sink conformance: shards', () => {
  for (const target of TARGETS)
    it(`${target.name}: two shards of one pipeline into one output hold every row once`, async () => {
      const dir = scenarioDir(`shards-${target.name}`);
      const out = output(dir, target, servers, 'sharded');
      const file = writePipeline(dir, undefined, {
        name: 'sharded',
        source: { type: 'file', paths: ['in'], format: 'jsonl', concurrency: 1 },
        sinks: [target.sink(out)],
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
      // Each shard read some of the files, and together all of them, once.
      expect(a.units.done).toBeGreaterThan(0);
      expect(b.units.done).toBeGreaterThan(0);
      expect(a.units.done + b.units.done).toBe(16);
      const ids = (await target.rows(out)).map((r) => r.id as number).sort((x, y) => x - y);
      expect(ids).toEqual(Array.from({ length: 16 }, (_, f) => [f * 10, f * 10 + 1]).flat());
    });
});
