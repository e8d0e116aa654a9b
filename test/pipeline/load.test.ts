import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/core/errors.js';
import { redact } from '../../src/core/redact.js';
import { loadPipeline, PipelineFileError, validatePipeline } from '../../src/pipeline/load.js';

const broken = path.resolve(import.meta.dirname, '../fixtures/broken');
const examples = path.resolve(import.meta.dirname, '../../pipelines');

/** `line:col: message` of every problem of a broken fixture, in file order. */
async function problemsOf(name: string, env: Record<string, string> = {}): Promise<string[]> {
  const file = path.join(broken, name);
  const { problems, pipeline } = await validatePipeline(file, env);
  expect(pipeline).toBeUndefined();
  for (const p of problems) expect(p.message.startsWith(`${file}:`)).toBe(true);
  return problems.map((p) => p.message.slice(file.length + 1));
}

function writeTemp(text: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'sluice-load-'));
  const file = path.join(dir, 'p.yaml');
  writeFileSync(file, text);
  return file;
}

const HEAD = 'version: 1\nname: t\nservice: { base_url: emulator, api_key: emulator-key }\n';

describe('broken pipelines are reported at file:line:column', () => {
  const cases: [string, string[]][] = [
    ['unknown-key-top.yaml', ['8:1: retries: unknown key "retries" (did you mean "metrics"?)']],
    ['unknown-key-source.yaml', ['10:3: source.max_page: unknown key "max_page" (did you mean "max_pages"?)']],
    ['unknown-key-sink.yaml', ['11:3: sink.tabel: unknown key "tabel" (did you mean "table"?)']],
    ['unknown-key-transform.yaml', ['9:42: transforms[1].exlude: unknown key "exlude" (did you mean "exclude"?)']],
    ['wrong-type.yaml', ['10:16: source.concurrency: expected a number, got a string ("lots")']],
    ['bad-enum.yaml', ['9:23: source.download.format: a string ("parquet") is not allowed']],
    ['unknown-source-type.yaml', ['7:9: source.type: unknown source type "snapshots" (did you mean "snapshot"?)']],
    ['unknown-sink-type.yaml', ['8:9: sink.type: unknown sink type "snowflake"']],
    [
      'unknown-transform-type.yaml',
      ['8:11: transforms[0].type: unknown transform type "normalise" (did you mean "normalize"?)'],
    ],
    ['missing-env.yaml', ['5:12: environment variable SLUICE_TEST_UNSET_KEY is not set']],
    ['env-required-message.yaml', ['4:13: SLUICE_TEST_UNSET_URL: point SLUICE_TEST_UNSET_URL at the service']],
    ['sink-and-sinks.yaml', ['8:1: set either `sink` or `sinks`, not both']],
    ['missing-required.yaml', ['7:3: source: missing required key "zone"']],
    [
      'many-problems.yaml',
      [
        '3:7: name: must be letters, digits, `_` and `-` (at most 64), starting with a letter or digit',
        '7:21: service.retry.retries: must be ≥ 0',
        '9:3: source: missing required key "zones"',
        '10:3: source.zone: unknown key "zone" (did you mean "zones"?)',
        '12:37: transforms[0].fields.rating: a string ("float") is not allowed',
        '13:33: sink.compres: unknown key "compres" (did you mean "compress"?)',
      ],
    ],
  ];
  it.each(cases)('%s', async (name, expected) => {
    expect(await problemsOf(name)).toEqual(expected);
  });

  // Generated here rather than kept as a fixture: `prettier --check .` cannot parse a malformed YAML file.
  it('malformed YAML: the first syntax error only', async () => {
    const file = writeTemp(HEAD + 'source: { type: countries\nsink:\n  type: jsonl\n  path: out\n');
    const { problems } = await validatePipeline(file, {});
    expect(problems.map((p) => p.message.slice(file.length + 1))).toEqual([
      '5:1: invalid YAML: Flow map in block collection must be sufficiently indented and end with a }',
    ]);
    expect(problems[0]?.hint).toMatch(/^fix the YAML syntax/);
  });

  it('says what is allowed: keys, values, registered types', async () => {
    const hints = async (name: string) =>
      (await validatePipeline(path.join(broken, name), {})).problems.map((p) => p.hint);
    expect((await hints('unknown-key-transform.yaml'))[0]).toBe(
      'allowed keys in transforms[1] (select): type, fields, exclude',
    );
    expect((await hints('unknown-key-top.yaml'))[0]).toMatch(
      /^allowed keys at the top level: version, name, service, source,/,
    );
    expect((await hints('bad-enum.yaml'))[0]).toBe('use one of: jsonl, json, csv');
    expect((await hints('unknown-source-type.yaml'))[0]).toMatch(/^registered source types: snapshot, .*serp, reviews/);
    expect((await hints('unknown-sink-type.yaml'))[0]).toMatch(/^registered sink types: .*duckdb/);
    expect((await hints('unknown-transform-type.yaml'))[0]).toMatch(/^registered transform types: normalize, /);
    expect((await hints('missing-required.yaml'))[0]).toMatch(/^zone: /);
    expect((await hints('missing-env.yaml'))[0]).toContain('${SLUICE_TEST_UNSET_KEY:-value}');
  });

  it('names the range a number must be in: integer bounds as integers, a bound that excludes its value', async () => {
    const hintOf = async (poll: string) => {
      const file = writeTemp(
        HEAD +
          `source: { type: deep_lookup, query: "Find all coffee roasters in Portland", poll: ${poll} }\n` +
          'sink: { type: jsonl, path: out }\n',
      );
      return (await validatePipeline(file, {})).problems.map((p) => p.hint);
    };
    expect(await hintOf('{ interval_ms: 5 }')).toEqual(['set interval_ms to an integer ≥ 10']);
    expect(await hintOf('{ timeout_s: 0 }')).toEqual(['set timeout_s to a number > 0']);
    expect(await hintOf('{ timeout_s: soon }')).toEqual(['set timeout_s to a number > 0']);
  });

  it('reads variables from the environment it is given', async () => {
    const file = path.join(broken, 'missing-env.yaml');
    const { problems, pipeline } = await validatePipeline(file, { SLUICE_TEST_UNSET_KEY: 'from-env-key' });
    expect(problems).toEqual([]);
    expect(pipeline?.config.service?.api_key).toBe('from-env-key');
  });
});

describe('loadPipeline', () => {
  it('loads every example pipeline with defaults applied', async () => {
    for (const name of [
      'company_profiles',
      'serp',
      'reviews',
      'file',
      'deep_lookup',
      'zone_cost',
      'countries',
      'datasets',
      'snapshot_to_parquet',
    ]) {
      const file = path.join(examples, `${name}.yaml`);
      const p = await loadPipeline(file, {});
      expect(p.file).toBe(file);
      expect(p.baseDir).toBe(examples);
      expect(p.name).toBe(p.config.name);
      expect(p.config.service?.base_url).toBe(name === 'file' ? 'emulator' : 'emulator');
      expect(p.config.fast_path).toBe(true);
      expect(Array.isArray(p.config.transforms)).toBe(true);
    }
    const serp = await loadPipeline(path.join(examples, 'serp.yaml'), { SLUICE_BASE_URL: 'https://api.example.com' });
    expect(serp.config.service?.base_url).toBe('https://api.example.com');
    expect(serp.config.source.engine).toBe('https://www.google.com');
  });

  it('throws the first problem with the count of the others', async () => {
    const err = await loadPipeline(path.join(broken, 'many-problems.yaml'), {}).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PipelineFileError);
    expect(err).toBeInstanceOf(ConfigError);
    const e = err as PipelineFileError;
    expect(e.problems).toHaveLength(6);
    expect([e.line, e.column]).toEqual([3, 7]);
    expect(e.message).toMatch(
      /many-problems\.yaml:3:7: name: must be .* \(and 5 more problems: `sluice validate` lists them\)$/,
    );
  });

  it('a misspelt required option: the run names the typo, as validate does, not the option it makes missing', async () => {
    const file = writeTemp(
      HEAD +
        'source:\n  type: snapshot\n  datset_id: gd_l1vikfnt1wgvvqz95w\n' +
        '  filter: { name: followers, operator: ">=", value: 100 }\n  records_limit: 10\n' +
        'sink: { type: jsonl, path: out }\n',
    );
    const { problems } = await validatePipeline(file, {});
    expect(problems.map((p) => p.message.slice(file.length + 1))).toEqual([
      '5:3: source.dataset_id: `dataset_id` is required with `filter`',
      '6:3: source.datset_id: unknown key "datset_id" (did you mean "dataset_id"?)',
    ]);
    const err = (await loadPipeline(file, {}).catch((e: unknown) => e)) as PipelineFileError;
    expect(err).toBeInstanceOf(PipelineFileError);
    expect(err.message).toBe(
      `${file}:6:3: source.datset_id: unknown key "datset_id" (did you mean "dataset_id"?) (and 1 more problem: \`sluice validate\` lists them)`,
    );
    expect(err.hint).toMatch(/^allowed keys in source \(snapshot\): type, dataset_id, /);
  });

  it('reports an unreadable or empty file as a problem of that file', async () => {
    const missing = path.join(tmpdir(), 'sluice-no-such-pipeline.yaml');
    expect((await validatePipeline(missing, {})).problems.map((p) => p.message)).toEqual([
      `${missing}:1:1: cannot read the pipeline file: no such file`,
    ]);
    const empty = writeTemp('# nothing yet\n');
    expect((await validatePipeline(empty, {})).problems.map((p) => p.message)).toEqual([
      `${empty}:1:1: the file is empty`,
    ]);
    const list = writeTemp('- a\n- b\n');
    expect((await validatePipeline(list, {})).problems.map((p) => p.message)).toEqual([
      `${list}:1:1: the file: expected a mapping, got a list`,
    ]);
  });

  it('reports a pipeline without a sink, and a repeated key', async () => {
    const noSink = writeTemp(HEAD + 'source: { type: countries }\n');
    expect((await validatePipeline(noSink, {})).problems.map((p) => p.message.slice(noSink.length + 1))).toEqual([
      '1:1: the pipeline has no sink',
    ]);
    const repeated = writeTemp(
      HEAD + 'source: { type: countries }\nsink: { type: jsonl, path: a }\nsink: { type: jsonl, path: b }\n',
    );
    const [problem] = (await validatePipeline(repeated, {})).problems;
    expect(problem?.message).toBe(`${repeated}:6:1: invalid YAML: Map keys must be unique`);
  });

  it('hints to quote ${…} inside flow collections, where YAML reads the braces', async () => {
    const file = writeTemp(
      HEAD.replace('api_key: emulator-key }', 'api_key: ${KEY} }') +
        'source: { type: countries }\nsink: { type: jsonl, path: a }\n',
    );
    const [problem] = (await validatePipeline(file, { KEY: 'k' })).problems;
    expect(problem?.message).toMatch(/:3:\d+: invalid YAML: /);
    expect(problem?.hint).toContain('must be quoted');
  });

  it('registers the API key as a secret as soon as it is read', async () => {
    const file = writeTemp(
      'version: 1\nname: t\nservice:\n  base_url: emulator\n  api_key: ${KEY}\nsource: { type: countries }\nsink: { type: jsonl, path: a }\n',
    );
    await loadPipeline(file, { KEY: 'load-test-secret-4242' });
    expect(redact('Bearer load-test-secret-4242')).toBe('Bearer ***');
  });
});

describe('typing of interpolated values', () => {
  const file = (source: string) =>
    writeTemp(
      'version: 1\nname: t\nservice:\n  base_url: emulator\n  api_key: ${KEY}\n' +
        `source:\n${source}\nsink: { type: jsonl, path: a }\nfast_path: \${FAST:-true}\n`,
    );

  it('turns a lone reference into the number or boolean the schema wants there', async () => {
    const f = file('  type: serp\n  zone: z\n  queries: [q]\n  concurrency: ${N:-4}\n  max_pages: "${PAGES}"');
    const p = await loadPipeline(f, { KEY: '12345', PAGES: '7', FAST: 'false' });
    expect(p.config.source.concurrency).toBe(4);
    expect(p.config.source.max_pages).toBe(7);
    expect(p.config.fast_path).toBe(false);
    // The schema wants a string here: digits stay text.
    expect(p.config.service?.api_key).toBe('12345');
  });

  it('keeps references inside longer text as strings, and says where a non-number came from', async () => {
    const f = file('  type: serp\n  zone: z${N}\n  queries: ["${N}"]\n  concurrency: ${N}');
    const { problems } = await validatePipeline(f, { KEY: 'k', N: 'four' });
    expect(problems.map((p) => p.message.slice(f.length + 1))).toEqual([
      '10:16: source.concurrency: expected a number, got a string from `${N}`',
    ]);
    const ok = await loadPipeline(f, { KEY: 'k', N: '8' });
    expect(ok.config.source.zone).toBe('z8');
    expect(ok.config.source.queries).toEqual(['8']);
  });

  it('does not pile schema errors on a value whose reference already failed', async () => {
    const f = file('  type: serp\n  zone: z\n  queries: [q]\n  concurrency: ${N}');
    const { problems } = await validatePipeline(f, { KEY: 'k' });
    expect(problems.map((p) => p.message.slice(f.length + 1))).toEqual(['10:16: environment variable N is not set']);
  });
});

describe('a pipeline file that is hostile or huge is a config error, not a crash', () => {
  const messages = async (file: string): Promise<string[]> =>
    (await validatePipeline(file, {})).problems.map((p) => p.message.slice(file.length + 1));

  it('a billion-laughs file: refused at its first alias, without expanding it', async () => {
    const lines = ['version: 1', 'name: t', 'a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]'];
    for (let i = 1; i < 10; i++)
      lines.push(
        `a${i}: &a${i} [${Array(9)
          .fill(`*a${i - 1}`)
          .join(', ')}]`,
      );
    const file = writeTemp(lines.join('\n') + '\n');
    const problems = await messages(file);
    expect(problems).toEqual([
      "4:10: the file's aliases (`*name`) expand to more than 1000 values: a pipeline file never needs that many, and expanding them would exhaust memory",
    ]);
    await expect(loadPipeline(file, {})).rejects.toMatchObject({ exitCode: 2 });
  });

  it('a file over 1 MiB, and one nested thousands deep', async () => {
    const huge = writeTemp(HEAD + `x: "${'a'.repeat(1 << 20)}"\n`);
    expect(await messages(huge)).toEqual([
      `1:1: the pipeline file is larger than 1 MiB (${(1 << 20) + HEAD.length + 6} bytes): not a pipeline file`,
    ]);
    await expect(loadPipeline(huge, {})).rejects.toBeInstanceOf(ConfigError);
    const deep = writeTemp(HEAD + `x: ${'['.repeat(2000)}${']'.repeat(2000)}\n`);
    expect(await messages(deep)).toEqual([expect.stringMatching(/^4:\d+: invalid YAML: nested too deeply/)]);
  });

  it('service ids in their documented shapes, short enough to name a file', async () => {
    const snapshot = writeTemp(
      HEAD + `source: { type: snapshot, snapshot_id: snap_${'a'.repeat(300)} }\nsink: { type: jsonl, path: a }\n`,
    );
    expect(await messages(snapshot)).toEqual([
      '4:40: source.snapshot_id: a snapshot id looks like snap_m2bxug4e2o352v1jv1',
    ]);
    const lookup = writeTemp(
      HEAD + 'source: { type: deep_lookup, request_id: "ai_../../x" }\nsink: { type: jsonl, path: a }\n',
    );
    expect(await messages(lookup)).toEqual([
      '4:42: source.request_id: a request id looks like ai_…, letters and digits',
    ]);
    const dataset = writeTemp(
      HEAD +
        `source: { type: snapshot, dataset_id: gd_${'b'.repeat(61)}, filter: { name: x, operator: is_null }, records_limit: 10 }\nsink: { type: jsonl, path: a }\n`,
    );
    expect(await messages(dataset)).toEqual(['4:39: source.dataset_id: a dataset id looks like gd_l1vikfnt1wgvvqz95w']);
  });

  it('Postgres names over 63 bytes, which Postgres would cut silently (two sinks, one table)', async () => {
    const long = `t_${'x'.repeat(62)}`;
    const file = writeTemp(
      HEAD +
        'source: { type: countries }\nsinks:\n' +
        `  - { type: postgres, table: ${long} }\n` +
        `  - { type: postgres, table: ${'y'.repeat(51)}, write: replace }\n` +
        `  - { type: postgres, table: ok, write: merge, primary_key: [${'k'.repeat(64)}] }\n`,
    );
    const problems = await validatePipeline(file, {});
    expect(problems.problems.map((p) => [p.message.slice(file.length + 1), p.hint])).toEqual([
      [
        `6:30: sinks[0].table: the table name is 64 bytes; Postgres keeps 63 bytes of a name and cuts the rest silently`,
        'use a table name of at most 63 bytes',
      ],
      [
        `7:30: sinks[1].table: the table name is 51 bytes; Postgres keeps 63 bytes of a name and cuts the rest silently (this sink also names \`${'y'.repeat(51)}__sluice_next\`)`,
        'use a table name of at most 50 bytes',
      ],
      [
        `8:62: sinks[2].primary_key[0]: the column name is 64 bytes; Postgres keeps 63 and cuts the rest silently`,
        'rename the column (a `rename` transform) to at most 63 bytes',
      ],
    ]);
  });
});
