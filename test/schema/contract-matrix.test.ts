/**
 * Schema contracts, every change × every mode × every sink: run 1 loads rows of the old shape, run 2 rows of the
 * new shape (with one old-shape row beside them), through the engine's `runPipeline` with an in-memory source and
 * the real sinks. Afterwards the table / files must hold the rows and types the mode promises — the same in every
 * sink (Parquet read back as one dataset with `union_by_name`) — and the summary, the dead letters and the error's
 * exit code must say what happened.
 *
 * Per change and sink type, one pipeline writes to three sinks of that type — evolve, discard_row, discard_value,
 * each its own `schema_contract` — so those modes are judged side by side on the same rows at a third of the cost;
 * `freeze`, which fails the run (and so keeps a file sink's staged units unpublished), has a pipeline of its own.
 */
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { z } from 'zod';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/cli.js';
import type { ComponentDef } from '../../src/contracts/component.js';
import { EXIT_CODES, SluiceError } from '../../src/core/errors.js';
import type { Row } from '../../src/core/types.js';
import type { RunSummary } from '../../src/operations/api.js';
import { readDeadLetters } from '../../src/state/dead-letter-file.js';
import { pipelinePaths } from '../../src/state/paths.js';
import { formatSummary } from '../../src/operations/summary.js';
import { runPipeline } from '../../src/operations/run.js';
import { readRunHistory, runHistoryFile } from '../../src/state/run-history.js';
import { formatRuns } from '../../src/cli/runs-table.js';
import { loadPipeline } from '../../src/pipeline/load.js';
import { registry, type Registry } from '../../src/pipeline/registry.js';
import { CONTRACT_MODES, type ContractMode } from '../../src/schema/contract.js';
import { memoryIo } from '../cli/memory-io.js';
import { MemorySource, recordingLogger, tempDir } from '../support/in-memory.js';

const quiet = { fresh: false, logFormat: 'text', quiet: true, progress: false } as const;

interface Change {
  old: Row;
  new: Row;
  /** The changed column's path as sinks report it. */
  column: string;
  /** DuckDB types of the columns before and after `evolve`. */
  before: Record<string, string>;
  after: Record<string, string>;
  /** A safe widening: only `freeze` refuses it. */
  safe?: boolean;
  /** The new row after `discard_value`. */
  valueDiscarded: Row;
}

const CHANGES: Record<string, Change> = {
  'new column': {
    old: { v: 1 },
    new: { v: 2, extra: 'x' },
    column: 'extra',
    before: { v: 'BIGINT' },
    after: { v: 'BIGINT', extra: 'VARCHAR' },
    valueDiscarded: { v: 2 },
  },
  'int → fraction': {
    old: { v: 1 },
    new: { v: 2.5 },
    column: 'v',
    before: { v: 'BIGINT' },
    after: { v: 'DOUBLE' },
    safe: true,
    valueDiscarded: { v: 2.5 },
  },
  'int → text': {
    old: { v: 1 },
    new: { v: 'two' },
    column: 'v',
    before: { v: 'BIGINT' },
    after: { v: 'VARCHAR' },
    valueDiscarded: { v: null },
  },
  'struct gains a field': {
    old: { s: { a: 1 } },
    new: { s: { a: 2, b: 'x' } },
    column: 's.b',
    before: { s: 'STRUCT(a BIGINT)' },
    after: { s: 'STRUCT(a BIGINT, b VARCHAR)' },
    valueDiscarded: { s: { a: 2 } },
  },
  'list of structs gains a field': {
    old: { l: [{ a: 1 }] },
    new: { l: [{ a: 2, b: 'x' }] },
    column: 'l[].b',
    before: { l: 'STRUCT(a BIGINT)[]' },
    after: { l: 'STRUCT(a BIGINT, b VARCHAR)[]' },
    valueDiscarded: { l: [{ a: 2 }] },
  },
};

const SINKS = ['duckdb', 'parquet', 'jsonl'] as const;
type SinkType = (typeof SINKS)[number];

/** Where the sink of `mode` writes: a table of one DuckDB file, or a directory. */
function target(type: SinkType, mode: ContractMode): string {
  return type === 'duckdb' ? `t_${mode}` : `${type}-${mode}`;
}

function sinkYaml(type: SinkType, mode: ContractMode): string {
  const where = type === 'duckdb' ? `path: out.db\n    table: ${target(type, mode)}` : `path: ${target(type, mode)}`;
  return `  - type: ${type}\n    ${where}\n    schema_contract: ${mode}\n`;
}

/** A registry whose `memory` source is whichever source the test sets: the sinks are the real ones. */
function world(type: SinkType, modes: readonly ContractMode[]) {
  let current = new MemorySource([]);
  const memory = {
    kind: 'source',
    type: 'memory',
    description: 'rows from the test',
    schema: z.object({ type: z.literal('memory') }).strict(),
    create: () => current,
  } as unknown as ComponentDef<'source'>;
  const reg: Registry = { ...registry, source: [memory, ...registry.source] };
  const dir = tempDir();
  const file = path.join(dir, 'p.yaml');
  writeFileSync(
    file,
    `version: 1\nname: matrix\nservice: { base_url: emulator, api_key: k }\nsource: { type: memory }\nsinks:\n${modes.map((m) => sinkYaml(type, m)).join('')}`,
  );
  return {
    dir,
    async run(
      unit: string,
      rows: Row[],
    ): Promise<{ summary?: RunSummary; error?: SluiceError & { summary?: RunSummary } }> {
      current = new MemorySource([{ id: unit, rows }]);
      const p = await loadPipeline(file, {}, { registry: reg });
      try {
        return { summary: await runPipeline(p, quiet, { registry: reg, log: recordingLogger() }) };
      } catch (err) {
        if (!(err instanceof SluiceError)) throw err;
        return { error: err as SluiceError & { summary?: RunSummary } };
      }
    },
    async history() {
      const p = await loadPipeline(file, {}, { registry: reg });
      return readRunHistory(runHistoryFile(pipelinePaths(p).stateDir));
    },
    async letters() {
      const p = await loadPipeline(file, {}, { registry: reg });
      return readDeadLetters(pipelinePaths(p).deadLetterFile);
    },
  };
}

const duckdb = await DuckDBInstance.create(':memory:');
afterAll(() => duckdb.closeSync());

interface Output {
  rows: Row[];
  /** Column → DuckDB type; undefined for JSONL (its values carry no types). */
  types?: Record<string, string>;
}

function files(dir: string, ext: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const name of readdirSync(d)) {
      const f = path.join(d, name);
      if (statSync(f).isDirectory()) walk(f);
      else if (name.endsWith(ext)) out.push(f);
    }
  };
  walk(dir);
  return out;
}

async function readOutput(type: SinkType, dir: string, mode: ContractMode): Promise<Output> {
  if (type === 'jsonl') {
    const rows = files(path.join(dir, target(type, mode)), '.jsonl').flatMap((f) =>
      readFileSync(f, 'utf8')
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as Row),
    );
    return { rows };
  }
  // Cells run concurrently: each reads through its own connection, the DuckDB file attached under its own name.
  const duck = await duckdb.connect();
  const alias = `db_${path.basename(dir).replace(/\W/g, '_')}_${mode}`;
  const src =
    type === 'duckdb'
      ? `${alias}.${target(type, mode)}`
      : `read_parquet('${path.join(dir, target(type, mode))}/**/*.parquet', union_by_name = true)`;
  if (type === 'duckdb') await duck.run(`ATTACH '${path.join(dir, 'out.db')}' AS ${alias} (READ_ONLY)`);
  try {
    const described = await duck.runAndReadAll(`DESCRIBE SELECT * FROM ${src}`);
    const types = Object.fromEntries(
      described.getRowObjectsJson().map((r) => [String(r.column_name), String(r.column_type)]),
    );
    const rows = (await duck.runAndReadAll(`SELECT * FROM ${src}`)).getRowObjectsJson() as Row[];
    return { rows, types };
  } finally {
    if (type === 'duckdb') await duck.run(`DETACH ${alias}`);
    duck.closeSync();
  }
}

/** Rows compared across sinks: null keys dropped, scalars as text, ordered by id. */
function canonical(rows: Row[]): unknown[] {
  const norm = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(norm);
    if (v !== null && typeof v === 'object') {
      const o: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) if (x !== null && x !== undefined) o[k] = norm(x);
      return o;
    }
    return String(v);
  };
  return rows.map(norm).sort((a, b) => Number((a as Row).id) - Number((b as Row).id));
}

describe.concurrent('schema contracts', () => {
  for (const [name, change] of Object.entries(CHANGES))
    for (const type of SINKS)
      it(`${name} × ${type}: evolve, freeze, discard_row, discard_value`, async () => {
        const rows1 = [{ id: 1, ...change.old }];
        const rows2 = [
          { id: 2, ...change.new },
          { id: 3, ...change.old },
        ];
        const frozen = world(type, ['freeze']);
        const others = world(type, ['evolve', 'discard_row', 'discard_value']);
        const worlds = await Promise.all(
          [frozen, others].map(async (w) => {
            expect((await w.run('u1', rows1)).error).toBeUndefined();
            const second = await w.run('u2', rows2);
            const letters = (await w.letters()).filter((d) => d.stage.startsWith('sink:'));
            return { ...second, summary: second.summary ?? second.error?.summary, letters };
          }),
        );
        const [f, o] = worlds as [(typeof worlds)[0], (typeof worlds)[0]];
        expect(f.error?.exitCode).toBe(EXIT_CODES.schemaContract);
        expect(f.error?.message).toContain(change.column);
        expect(f.error?.message).toContain(target(type, 'freeze'));
        expect(f.error?.hint).toContain('schema_contract: evolve');
        expect(o.error).toBeUndefined();
        for (const r of worlds) expect(r.summary?.deadLetters).toBe(r.letters.length);
        // The changes are told in the summary's text and kept in the run history (`sluice runs`).
        expect(formatSummary(o.summary!)).toMatch(new RegExp(`\\n  schema {7}${type} .*${target(type, 'evolve')}.*: `));
        const history = await others.history();
        expect(history.at(-1)!.schemaChanges).toEqual(o.summary!.schemaChanges);
        expect(formatRuns(history)).toContain(`schema: ${o.summary!.schemaChanges[0]!.sink}: `);

        for (const mode of CONTRACT_MODES) {
          const cell = `${mode} × ${type}`;
          const refuses = mode !== 'evolve' && !(change.safe && mode !== 'freeze');
          const evolves = mode === 'evolve' || (change.safe === true && mode !== 'freeze');
          let expected: Row[];
          if (mode === 'freeze') expected = [{ id: 1, ...change.old }];
          else if (!refuses)
            expected = [
              { id: 1, ...change.old },
              { id: 2, ...change.new },
              { id: 3, ...change.old },
            ];
          else if (mode === 'discard_row')
            expected = [
              { id: 1, ...change.old },
              { id: 3, ...change.old },
            ];
          else
            expected = [
              { id: 1, ...change.old },
              { id: 2, ...change.valueDiscarded },
              { id: 3, ...change.old },
            ];

          const w = mode === 'freeze' ? frozen : others;
          const { summary, letters } = mode === 'freeze' ? f : o;
          const out = await readOutput(type, w.dir, mode);
          expect(canonical(out.rows), cell).toEqual(canonical(expected));
          if (out.types) expect(out.types, cell).toEqual({ id: 'BIGINT', ...(evolves ? change.after : change.before) });

          const changed = summary!.schemaChanges
            .filter((s) => s.sink.includes(target(type, mode)))
            .flatMap((s) => s.changes.map((c) => c.column));
          if (evolves) expect(changed, cell).toContain(change.column);
          else expect(changed, cell).toEqual([]);

          const mine = letters.filter((d) => d.stage.includes(target(type, mode)));
          if (refuses && mode !== 'freeze') {
            expect(mine, cell).toHaveLength(1);
            expect(mine[0]!.reason, cell).toContain(change.column);
            if (mode === 'discard_row') expect(JSON.parse(mine[0]!.raw!), cell).toEqual({ id: 2, ...change.new });
          } else expect(mine, cell).toEqual([]);
        }
      });
});

describe('the CLI under freeze', () => {
  it(`exits ${EXIT_CODES.schemaContract} and names the change and the fix`, async () => {
    const dir = tempDir();
    const file = path.join(dir, 'p.yaml');
    writeFileSync(
      file,
      'version: 1\nname: frozen\nservice: { base_url: emulator, api_key: k }\n' +
        'source: { type: file, paths: [in.jsonl], format: jsonl }\n' +
        'schema_contract: freeze\nsink: { type: jsonl, path: out }\n',
    );
    const run = async (line: string): Promise<{ code: number; stderr: string }> => {
      writeFileSync(path.join(dir, 'in.jsonl'), `${line}\n`);
      const io = memoryIo({});
      const code = await runCli(['run', file, '--quiet', '--no-progress'], io);
      return { code, stderr: io.stderr.join('\n') };
    };
    expect((await run('{"id":1,"v":1}')).code).toBe(EXIT_CODES.success);
    const refused = await run('{"id":2,"v":"two"}');
    expect(refused.code).toBe(EXIT_CODES.schemaContract);
    expect(refused.stderr).toContain('type change v: integer → string');
    expect(refused.stderr).toContain('schema_contract: evolve');
  });
});
