/**
 * What `sluice validate` checks beyond the schema, before any request is made: every file a pipeline reads exists
 * and is readable, and merge keys are output columns where the transforms fix them — each problem at the
 * file:line:column of the value in the pipeline file.
 */
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { validatePipeline } from '../../src/pipeline/load.js';

const HEAD = 'version: 1\nname: t\nservice: { base_url: emulator, api_key: emulator-key }\n';

/** A pipeline file in a fresh directory with the given other files; returns the pipeline's path. */
function pipelineIn(text: string, files: Record<string, string> = {}): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'sluice-preflight-'));
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    writeFileSync(path.join(dir, name), content);
  }
  const file = path.join(dir, 'p.yaml');
  writeFileSync(file, HEAD + text);
  return file;
}

/** `line:col: message` of every problem, and the fix lines. */
async function problems(file: string): Promise<{ at: string[]; hints: string[] }> {
  const r = await validatePipeline(file, {});
  return {
    at: r.problems.map((p) => p.message.slice(file.length + 1)),
    hints: r.problems.map((p) => p.hint ?? ''),
  };
}

const SINK = 'sink: { type: jsonl, path: out }\n';

describe('referenced files', () => {
  it('a missing queries_file is reported at its value', async () => {
    const file = pipelineIn(`source:\n  type: serp\n  zone: serp_zone\n  queries_file: queries.txt\n${SINK}`);
    const dir = path.dirname(file);
    const r = await problems(file);
    expect(r.at).toEqual([`7:17: source.queries_file: no such file: ${path.join(dir, 'queries.txt')}`]);
    expect(r.hints[0]).toContain(`relative paths start at the pipeline file's directory (${dir})`);
  });

  it('an existing queries_file passes', async () => {
    const file = pipelineIn(`source: { type: serp, zone: z, queries_file: q.txt }\n${SINK}`, { 'q.txt': 'ramen\n' });
    expect((await validatePipeline(file, {})).problems).toEqual([]);
  });

  it('from_serp.queries_file of a reviews crawl', async () => {
    const file = pipelineIn(
      `source:\n  type: reviews\n  zone: z\n  from_serp:\n    queries_file: missing/q.csv\n${SINK}`,
    );
    expect((await problems(file)).at).toEqual([
      `8:19: source.from_serp.queries_file: no such file: ${path.join(path.dirname(file), 'missing/q.csv')}`,
    ]);
  });

  it('each missing filter-values file of a snapshot, at its list item', async () => {
    const file = pipelineIn(
      [
        'source:',
        '  type: snapshot',
        '  dataset_id: gd_l1vikfnt1wgvvqz95w',
        '  filter: { name: country_code, operator: in, value: countries.csv }',
        '  files: [countries.csv, other.csv]',
        '  records_limit: 100',
        SINK,
      ].join('\n'),
      { 'other.csv': 'country_code\nde\n' },
    );
    expect((await problems(file)).at).toEqual([
      `8:11: source.files[0]: no such file: ${path.join(path.dirname(file), 'countries.csv')}`,
    ]);
  });

  it('file-source paths: a missing one fails, a directory passes', async () => {
    const file = pipelineIn(`source:\n  type: file\n  format: jsonl\n  paths:\n    - data\n    - nope.jsonl\n${SINK}`, {
      'data/a.jsonl': '{}\n',
    });
    expect((await problems(file)).at).toEqual([
      `9:7: source.paths[1]: no such file: ${path.join(path.dirname(file), 'nope.jsonl')}`,
    ]);
  });

  it('a directory where a file is wanted', async () => {
    const file = pipelineIn(`source: { type: serp, zone: z, queries_file: dir }\n${SINK}`, { 'dir/x': '' });
    expect((await problems(file)).at).toEqual([
      `4:46: source.queries_file: a directory, not a file: ${path.join(path.dirname(file), 'dir')}`,
    ]);
  });

  it.skipIf(process.getuid?.() === 0)('an unreadable file', async () => {
    const file = pipelineIn(`source: { type: serp, zone: z, queries_file: q.txt }\n${SINK}`, { 'q.txt': 'q\n' });
    chmodSync(path.join(path.dirname(file), 'q.txt'), 0o000);
    expect((await problems(file)).at[0]).toMatch(/^4:46: source\.queries_file: permission denied: /);
  });

  it('a path taken from the environment is checked as interpolated, at the reference', async () => {
    const file = pipelineIn(`source: { type: serp, zone: z, queries_file: "\${QUERIES}" }\n${SINK}`);
    const r = await validatePipeline(file, { QUERIES: 'from-env.txt' });
    expect(r.problems.map((p) => p.message.slice(file.length + 1))).toEqual([
      `4:46: source.queries_file: no such file: ${path.join(path.dirname(file), 'from-env.txt')}`,
    ]);
  });

  it('the emulator’s faults file', async () => {
    const file = pipelineIn('');
    const text = `version: 1\nname: t\nservice:\n  base_url: emulator\n  api_key: k\n  emulator: { faults: f.yaml }\nsource: { type: countries }\n${SINK}`;
    writeFileSync(file, text);
    expect((await problems(file)).at).toEqual([
      `6:23: service.emulator.faults: no such file: ${path.join(path.dirname(file), 'f.yaml')}`,
    ]);
  });
});

describe('merge keys', () => {
  const duckdb = (key: string): string =>
    `sink:\n  type: duckdb\n  path: w.duckdb\n  table: t\n  write: merge\n  primary_key: [${key}]\n`;
  const serpSource = 'source: { type: serp, zone: serp_zone, queries: [q] }\n';

  it('a key that is not a column of a normalize preset, with a guess and the columns', async () => {
    const file = pipelineIn(`${serpSource}transforms: [{ type: normalize, preset: serp_organic }]\n${duckdb('lnk')}`);
    const r = await problems(file);
    expect(r.at).toEqual([
      `11:17: sink.primary_key[0]: "lnk" is not a column of the rows this sink receives (did you mean "link"?)`,
    ]);
    expect(r.hints[0]).toMatch(
      /^the columns after transforms\[0\] \(normalize serp_organic\) are: query, page, start, rank, /,
    );
  });

  it('a key that is a column passes', async () => {
    const file = pipelineIn(
      `${serpSource}transforms: [{ type: normalize, preset: serp_organic }]\n${duckdb('query, link')}`,
    );
    expect((await validatePipeline(file, {})).problems).toEqual([]);
  });

  it('follows select, rename and the transforms that keep columns', async () => {
    const transforms =
      'transforms:\n' +
      '  - { type: select, fields: [id, name, city] }\n' +
      '  - { type: rename, fields: { name: full_name } }\n' +
      '  - { type: filter, field: city, op: "=", value: Berlin }\n' +
      '  - { type: dedupe, key: [id] }\n';
    const source = 'source: { type: file, paths: [d.jsonl], format: jsonl }\n';
    const ok = pipelineIn(
      source +
        transforms +
        `sinks:\n  - type: duckdb\n    path: w.duckdb\n    table: t\n    write: merge\n    primary_key: [id, full_name]\n`,
      { 'd.jsonl': '' },
    );
    expect((await validatePipeline(ok, {})).problems).toEqual([]);
    const bad = pipelineIn(
      source +
        transforms +
        `sinks:\n  - type: duckdb\n    path: w.duckdb\n    table: t\n    write: merge\n    primary_key: [id, name]\n`,
      { 'd.jsonl': '' },
    );
    expect((await problems(bad)).at).toEqual([
      '15:23: sinks[0].primary_key[1]: "name" is not a column of the rows this sink receives',
    ]);
  });

  it('a key the company_profile preset does not declare (its rows may carry more, but not in every row)', async () => {
    const source = 'source: { type: file, paths: [d.jsonl], format: jsonl }\n';
    const preset = 'transforms: [{ type: normalize, preset: company_profile }]\n';
    const bad = pipelineIn(source + preset + duckdb('company_uid'), { 'd.jsonl': '' });
    const r = await problems(bad);
    expect(r.at).toEqual([
      '11:17: sink.primary_key[0]: "company_uid" is not a column of the rows this sink receives (did you mean "company_id"?)',
    ]);
    expect(r.hints[0]).toMatch(
      /^a merge key must be in every row: name columns transforms\[0\] \(normalize company_profile\) declares \(input, id, company_id, name, /,
    );
    const ok = pipelineIn(source + preset + duckdb('company_id'), { 'd.jsonl': '' });
    expect((await validatePipeline(ok, {})).problems).toEqual([]);
  });

  it('says nothing where the columns depend on the data', async () => {
    const source = 'source: { type: file, paths: [d.jsonl], format: jsonl }\n';
    for (const transforms of ['', 'transforms: [{ type: select, fields: [a] }, { type: flatten }]\n']) {
      const file = pipelineIn(source + transforms + duckdb('anything'), { 'd.jsonl': '' });
      expect((await validatePipeline(file, {})).problems, transforms).toEqual([]);
    }
  });
});
