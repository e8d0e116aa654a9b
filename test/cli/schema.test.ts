import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/cli.js';
import { formatPlan } from '../../src/cli/commands/plan.js';
import type { SinkColumns } from '../../src/operations/api.js';
import { presetDeclared } from '../../src/transforms/normalize.js';
import { memoryIo } from './memory-io.js';

const dir = mkdtempSync(path.join(tmpdir(), 'sluice-schema-'));
writeFileSync(path.join(dir, 'pages.jsonl'), '{"a": 1, "b": {"c": "x"}}\n');

function pipeline(name: string, transforms: string[], sinks: string[]): string {
  const file = path.join(dir, `${name}.yaml`);
  writeFileSync(
    file,
    [
      'version: 1',
      `name: ${name}`,
      'service: { base_url: emulator, api_key: emulator-key }',
      'source: { type: file, paths: [pages.jsonl], format: jsonl }',
      ...(transforms.length ? ['transforms:', ...transforms.map((t) => `  - ${t}`)] : []),
      'sinks:',
      ...sinks.map((s) => `  - ${s}`),
      '',
    ].join('\n'),
  );
  return file;
}

async function schema(...args: string[]) {
  const io = memoryIo();
  const code = await runCli(['schema', ...args], io);
  return { code, out: io.stdout.join('\n'), err: io.stderr.join('\n') };
}

describe('sluice schema', () => {
  const file = pipeline(
    'related',
    ['{ type: normalize, preset: serp_related }'],
    [
      '{ type: duckdb, path: out/w.duckdb, table: related }',
      '{ type: parquet, path: out/pq, lineage: true }',
      '{ type: jsonl, path: out/jl }',
    ],
  );

  it("prints every sink's declared columns in its own type names, with nullability and description", async () => {
    const r = await schema(file);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    const [duck, parquet, jsonl] = r.out.split('\n\n');
    const n = presetDeclared('serp_related').length;
    expect(duck).toMatch(new RegExp(`^duckdb .*related: ${n} declared columns`));
    expect(duck).toMatch(/\n {2}depth +BIGINT +NOT NULL +How deep in groups it sits/);
    expect(duck).toMatch(/\n {2}fetched_at +TIMESTAMP +When the page was fetched/);
    // Lineage columns only where `lineage: true`.
    expect(parquet).toMatch(new RegExp(`^parquet .*: ${n + 2} declared columns`));
    expect(parquet).toMatch(/\n {2}_sluice_loaded_at +\S+ +NOT NULL/);
    expect(duck).not.toContain('_sluice_run_id');
    expect(jsonl).toMatch(/\n {2}depth +integer +NOT NULL/);
  });

  it('--json gives the same as data', async () => {
    const r = await schema(file, '--json');
    expect(r.code).toBe(0);
    const sinks = JSON.parse(r.out) as SinkColumns[];
    expect(sinks.map((s) => s.declared)).toEqual([true, true, true]);
    expect(sinks[0]!.columns.find((c) => c.name === 'text')).toEqual({
      name: 'text',
      type: 'VARCHAR',
      nullable: true,
      description: 'The related search.',
    });
  });

  it("says the columns are inferred where the transforms declare none, and shows the output's once written", async () => {
    const raw = pipeline('raw', ['{ type: flatten }'], ['{ type: jsonl, path: out/raw }']);
    const before = await schema(raw);
    expect(before.code).toBe(0);
    expect(before.out).toMatch(/^jsonl .*: columns inferred from the data.*\n {2}nothing written yet$/);
    const run = memoryIo();
    expect(await runCli(['run', raw, '--quiet'], run), run.stderr.join('\n')).toBe(0);
    const after = await schema(raw);
    expect(after.out).toMatch(
      /columns inferred from the data.*\n {2}its output has 2 columns now:\n {4}a +BIGINT\n {4}b__c +VARCHAR$/,
    );
  });

  it('exits 2 with the problem on a bad pipeline file', async () => {
    const bad = path.join(dir, 'bad.yaml');
    writeFileSync(bad, 'version: 1\nname: bad\nsource: { type: file }\nsink: { type: jsonl }\n');
    const r = await schema(bad);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/^error: .*bad\.yaml:\d+:\d+: /);
    expect(r.err).toContain('fix:');
    const missing = await schema(path.join(dir, 'missing.yaml'));
    expect(missing.code).toBe(2);
  });

  it('has --help with an example', async () => {
    const io = memoryIo();
    expect(await runCli(['schema', '--help'], io)).toBe(0);
    expect(io.stdout.join('\n')).toContain('Examples:');
  });
});

describe('sluice plan', () => {
  it('lists the columns of each sink, without descriptions', () => {
    const text = formatPlan(
      {
        pipeline: 'p',
        source: 'file',
        units: [],
        requests: [],
        targets: ['jsonl out/a', 'jsonl out/b'],
        columns: [
          {
            target: 'jsonl out/a',
            declared: true,
            columns: [{ name: 'id', type: 'string', nullable: false, description: 'Never shown by plan.' }],
          },
          { target: 'jsonl out/b', declared: false, columns: [] },
        ],
        notes: [],
      },
      10,
    );
    expect(text).toContain('columns:\n  jsonl out/a: 1 declared columns\n    id  string  NOT NULL\n');
    expect(text).toContain('  jsonl out/b: columns inferred from the data');
    expect(text).not.toContain('Never shown');
  });
});
