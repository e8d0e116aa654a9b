/**
 * The bad-input corpus: every way a user, the environment, the service or the data can be wrong, and what sluice
 * does about it. Each fatal case ends with one `error:` line and one `fix:` line that says what to change, exits
 * non-zero, and commits nothing (see bad-input/harness.ts for what "nothing" is checked against). Bad records are
 * not fatal: they become dead letters with the reason and offset, and the good records are committed.
 */
import { chmodSync, readFileSync } from 'node:fs';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT_CODES } from '../../src/core/errors.js';
import { startEmulator, type EmulatorHandle } from '../../src/emulator/server.js';
import {
  KEY,
  cli,
  duckdbRows,
  expectFailure,
  expectNothingCommitted,
  expectNothingWritten,
  inventory,
  workspace,
  type Result,
  type Workspace,
} from './bad-input/harness.js';

const DATASET = 'gd_l1vikfnt1wgvvqz95w';

let emu: EmulatorHandle;
beforeAll(async () => {
  emu = await startEmulator({ apiKey: KEY, seed: 5, size: 2000, timeScale: 50 });
});
afterAll(() => emu?.close());

const env = (service: { url: string } = emu): Record<string, string> => ({
  SLUICE_BASE_URL: service.url,
  SLUICE_API_KEY: KEY,
});

/** The head every pipeline of the corpus shares: the service from the environment, no retries to wait out. */
const HEAD = [
  'version: 1',
  'name: bad_input',
  'service:',
  '  base_url: ${SLUICE_BASE_URL}',
  '  api_key: ${SLUICE_API_KEY}',
  '  retry: { retries: 1, base_delay_ms: 10, max_delay_ms: 20 }',
  '',
].join('\n');

const FILTER_SOURCE = [
  'source:',
  '  type: snapshot',
  `  dataset_id: ${DATASET}`,
  "  filter: { name: followers, operator: '>', value: 100 }",
  '  records_limit: 500',
  '  download: { format: jsonl, batch_size: 1000 }',
  '  poll: { interval_ms: 20 }',
  '',
].join('\n');

const JSONL_SINK = 'sink: { type: jsonl, path: out }\n';

interface Ran extends Result {
  ws: Workspace;
  before: Set<string>;
}

/** Writes `files` (the pipeline as p.yaml) into a fresh workspace and runs `argv` (`{p}` = the pipeline file). */
async function run(
  files: Record<string, string | Buffer>,
  argv: string[] = ['run', '{p}', '--no-progress'],
  environment: Record<string, string> = env(),
): Promise<Ran> {
  const ws = workspace();
  for (const [name, content] of Object.entries(files)) ws.write(name, content);
  const before = ws.files();
  const r = await cli(
    argv.map((a) => a.replace('{p}', ws.path('p.yaml'))),
    environment,
  );
  return { ...r, ws, before };
}

/** A case whose pipeline file is wrong: reported at p.yaml:line:column, before anything is created; exit 2. */
interface ConfigCase {
  name: string;
  yaml: string;
  error: RegExp;
  fix: RegExp;
  env?: Record<string, string>;
}

const configCases: ConfigCase[] = [
  {
    name: 'malformed YAML: a flow mapping never closed',
    yaml: HEAD + 'source: { type: countries\n' + JSONL_SINK,
    error: /p\.yaml:\d+:\d+: invalid YAML: .*Flow map/,
    fix: /^fix the YAML syntax/,
  },
  {
    name: 'malformed YAML: a tab in the indentation',
    yaml: HEAD + 'source:\n\ttype: countries\n' + JSONL_SINK,
    error: /p\.yaml:8:1: invalid YAML: .*[Tt]ab/,
    fix: /^fix the YAML syntax \(indentation with spaces/,
  },
  {
    name: 'malformed YAML: a value with `: ` in it, unquoted',
    yaml: HEAD.replace('name: bad_input', 'name: bad: input') + 'source: { type: countries }\n' + JSONL_SINK,
    error: /p\.yaml:2:\d+: invalid YAML: /,
    fix: /quotes around values with `: `/,
  },
  {
    name: 'malformed YAML: a key given twice',
    yaml: HEAD + 'source: { type: countries }\nsource: { type: datasets }\n' + JSONL_SINK,
    error: /p\.yaml:8:1: invalid YAML: Map keys must be unique/,
    fix: /^fix the YAML syntax/,
  },
  {
    name: 'malformed YAML: `${…}` unquoted inside `{ }`',
    yaml:
      'version: 1\nname: bad_input\nservice: { base_url: ${SLUICE_BASE_URL}, api_key: k }\n' +
      'source: { type: countries }\n' +
      JSONL_SINK,
    error: /p\.yaml:3:\d+: invalid YAML: /,
    fix: /a `\$\{…\}` value must be quoted/,
  },
  {
    name: 'an empty pipeline file',
    yaml: '',
    error: /p\.yaml:1:1: the file is empty/,
    fix: /start with `version: 1`/,
  },
  {
    name: 'a list where the pipeline mapping belongs',
    yaml: '- version: 1\n- name: bad_input\n',
    error: /p\.yaml:1:1: the file: expected a mapping, got a list$/,
    fix: /^start with `version: 1`, `name`, `service`, `source` and `sink`/,
  },
  {
    name: 'unknown key at the top level',
    yaml: HEAD + 'source: { type: countries }\n' + JSONL_SINK + 'retries: 3\n',
    error: /p\.yaml:9:1: retries: unknown key "retries"( \(did you mean "\w+"\?\))?$/,
    fix: /^allowed keys at the top level: version, name, service, source/,
  },
  {
    name: 'unknown key in the source',
    yaml: HEAD + 'source: { type: serp, zone: serp_zone, querys: [coffee] }\n' + JSONL_SINK,
    error: /p\.yaml:7:\d+: source\.querys: unknown key "querys" \(did you mean "queries"\?\)/,
    fix: /^allowed keys in source \(serp\): type, /,
  },
  {
    name: 'unknown key in the sink',
    yaml: HEAD + 'source: { type: countries }\nsink: { type: duckdb, path: w.duckdb, tabel: t }\n',
    error: /p\.yaml:8:\d+: sink\.tabel: unknown key "tabel" \(did you mean "table"\?\)/,
    fix: /^allowed keys in sink \(duckdb\): type, path, table/,
  },
  {
    name: 'unknown key in a transform',
    yaml: HEAD + 'source: { type: countries }\ntransforms: [{ type: select, feilds: [a] }]\n' + JSONL_SINK,
    error: /p\.yaml:8:\d+: transforms\[0\]\.feilds: unknown key "feilds" \(did you mean "fields"\?\)/,
    fix: /^allowed keys in transforms\[0\] \(select\): type, fields, exclude/,
  },
  {
    name: 'unknown key in a nested object: source.download',
    yaml: HEAD + FILTER_SOURCE.replace('download: { format: jsonl,', 'download: { fromat: jsonl,') + JSONL_SINK,
    error: /p\.yaml:12:\d+: source\.download\.fromat: unknown key "fromat" \(did you mean "format"\?\)/,
    fix: /^allowed keys in source\.download: format, compress, batch_size/,
  },
  {
    name: 'unknown key in a nested object: source.poll',
    yaml: HEAD + FILTER_SOURCE.replace('poll: { interval_ms: 20 }', 'poll: { interval: 20 }') + JSONL_SINK,
    error: /p\.yaml:13:\d+: source\.poll\.interval: unknown key "interval"/,
    fix: /^allowed keys in source\.poll: interval_ms, timeout_s/,
  },
  {
    name: 'unknown key in a nested object: service.retry',
    yaml: HEAD.replace('retries: 1,', 'retrys: 1,') + 'source: { type: countries }\n' + JSONL_SINK,
    error: /p\.yaml:6:\d+: service\.retry\.retrys: unknown key "retrys" \(did you mean "retries"\?\)/,
    fix: /^allowed keys in service\.retry: retries, base_delay_ms, max_delay_ms/,
  },
  {
    name: 'wrong type: a number as words',
    yaml: HEAD + FILTER_SOURCE + '  concurrency: lots\n' + JSONL_SINK,
    error: /p\.yaml:14:16: source\.concurrency: expected a number, got a string \("lots"\)/,
    fix: /^set concurrency to an integer from 1 to 64; concurrency: /,
  },
  {
    name: 'wrong type: one query where a list belongs',
    yaml: HEAD + 'source: { type: serp, zone: serp_zone, queries: coffee }\n' + JSONL_SINK,
    error: /source\.queries: expected a list, got a string \("coffee"\)/,
    fix: /^queries: Search queries/,
  },
  {
    name: 'wrong type: records_limit quoted',
    yaml: HEAD + FILTER_SOURCE.replace('records_limit: 500', "records_limit: '500'") + JSONL_SINK,
    error: /source\.records_limit: expected a number, got a string \("500"\)/,
    fix: /^set records_limit to an integer ≥ 1; records_limit: /,
  },
  {
    name: 'wrong type: yes for a boolean (YAML 1.2 reads a string)',
    yaml: HEAD + 'source: { type: countries }\n' + JSONL_SINK + 'fast_path: yes\n',
    error: /fast_path: expected true or false, got a string \("yes"\)/,
    fix: /^fast_path: /,
  },
  {
    name: 'bad enum: download format',
    yaml: HEAD + FILTER_SOURCE.replace('format: jsonl', 'format: parquet') + JSONL_SINK,
    error: /source\.download\.format: a string \("parquet"\) is not allowed/,
    fix: /^use one of: jsonl, json, csv$/,
  },
  {
    name: 'bad enum: sink write mode',
    yaml: HEAD + 'source: { type: countries }\nsink: { type: jsonl, path: out, write: upsert }\n',
    error: /sink\.write: a string \("upsert"\) is not allowed/,
    fix: /^use one of: append, replace$/,
  },
  {
    name: 'bad enum: cast type',
    yaml: HEAD + 'source: { type: countries }\ntransforms: [{ type: cast, fields: { n: float } }]\n' + JSONL_SINK,
    error: /transforms\[0\]\.fields\.n: a string \("float"\) is not allowed/,
    fix: /^use one of: int, double, text/,
  },
  {
    name: 'unknown source type',
    yaml: HEAD + 'source: { type: snapshots }\n' + JSONL_SINK,
    error: /source\.type: unknown source type "snapshots" \(did you mean "snapshot"\?\)/,
    fix: /^registered source types: snapshot, /,
  },
  {
    name: 'unknown sink type',
    yaml: HEAD + 'source: { type: countries }\nsink: { type: snowflake, path: x }\n',
    error: /sink\.type: unknown sink type "snowflake"/,
    fix: /^registered sink types: duckdb, parquet, jsonl, postgres$/,
  },
  {
    name: 'missing required field: the zone of a serp source',
    yaml: HEAD + 'source: { type: serp, queries: [coffee] }\n' + JSONL_SINK,
    error: /p\.yaml:7:\d+: source: missing required key "zone"/,
    fix: /^zone: /,
  },
  {
    name: 'missing required field: the path of a sink',
    yaml: HEAD + 'source: { type: countries }\nsink: { type: jsonl }\n',
    error: /sink: missing required key "path"/,
    fix: /^path: Output directory/,
  },
  {
    name: 'missing required field: version',
    yaml: HEAD.replace('version: 1\n', '') + 'source: { type: countries }\n' + JSONL_SINK,
    error: /p\.yaml:1:1: the file: missing required key "version"/,
    fix: /^version: /,
  },
  {
    name: 'a missing environment variable: ${X}',
    yaml: HEAD + 'source: { type: countries }\n' + JSONL_SINK,
    env: { SLUICE_BASE_URL: 'http://127.0.0.1:9' },
    error: /p\.yaml:5:12: environment variable SLUICE_API_KEY is not set$/,
    fix: /^export SLUICE_API_KEY=…, or give a default in the file: \$\{SLUICE_API_KEY:-value\}$/,
  },
  {
    name: 'a missing environment variable: ${X:?message}',
    yaml:
      HEAD.replace('${SLUICE_BASE_URL}', '${SLUICE_BASE_URL:?point it at the service}') +
      'source: { type: countries }\n' +
      JSONL_SINK,
    env: { SLUICE_API_KEY: KEY },
    error: /p\.yaml:4:13: SLUICE_BASE_URL: point it at the service$/,
    fix: /^set SLUICE_BASE_URL in the environment/,
  },
  {
    name: 'a reference that is not a variable name',
    yaml: HEAD + 'source: { type: serp, zone: "${1ZONE}", queries: [coffee] }\n' + JSONL_SINK,
    error: /`\$\{1ZONE\}` is not a valid reference/,
    fix: /^write \$\{NAME\}/,
  },
  {
    name: 'filter groups nested 4 levels deep',
    yaml:
      HEAD +
      FILTER_SOURCE.replace(
        "filter: { name: followers, operator: '>', value: 100 }",
        "filter: { operator: and, filters: [{ operator: or, filters: [{ operator: and, filters: [{ operator: and, filters: [{ name: followers, operator: '>', value: 1 }] }] }] }] }",
      ) +
      JSONL_SINK,
    error:
      /source\.filter\.filters\[0\]\.filters\[0\]\.filters\[0\]: filter groups nest at most 3 levels; this group is level 4/,
    fix: /^flatten the filter/,
  },
  {
    name: 'an unknown filter operator',
    yaml: HEAD + FILTER_SOURCE.replace("operator: '>'", "operator: '=>'") + JSONL_SINK,
    error: /source\.filter\.operator: unknown operator "=>" \(did you mean "="\?\)/,
    fix: /^field operators: =, !=, <, <=, >, >=, in, not_in, .*is_null, is_not_null; group operators: and, or$/,
  },
  {
    name: 'is_null with a value',
    yaml: HEAD + FILTER_SOURCE.replace("operator: '>', value: 100", 'operator: is_null, value: 100') + JSONL_SINK,
    error: /source\.filter\.value: operator is_null takes no value/,
    fix: /^remove `value`/,
  },
  {
    name: 'an unknown key in a filter',
    yaml: HEAD + FILTER_SOURCE.replace('value: 100 }', 'value: 100, field: x }') + JSONL_SINK,
    error: /source\.filter\.field: unknown key "field" in a field filter/,
    fix: /^allowed keys in a field filter: name, operator, value$/,
  },
  {
    name: '`in` with a file that is not uploaded',
    yaml:
      HEAD +
      FILTER_SOURCE.replace(
        "name: followers, operator: '>', value: 100",
        'name: country_code, operator: in, value: countries.csv',
      ) +
      JSONL_SINK,
    error: /source\.filter\.value: "countries\.csv" names a file that source\.files does not upload/,
    fix: /^add the file to `files:`/,
  },
  {
    name: 'max_cost that is not an amount',
    yaml: HEAD + 'source: { type: deep_lookup, query: Find all bakeries, max_cost: 100 dollars }\n' + JSONL_SINK,
    error: /source\.max_cost: expected a dollar amount like "\$50\.00"/,
    fix: /^max_cost: /,
  },
  {
    name: 'batch_size below the service minimum of 1000',
    yaml: HEAD + FILTER_SOURCE.replace('batch_size: 1000', 'batch_size: 500') + JSONL_SINK,
    error: /source\.download\.batch_size: must be ≥ 1000/,
    fix: /^set batch_size to an integer ≥ 1000; batch_size: .*at least 1000/,
  },
  {
    name: 'records_limit of 0',
    yaml: HEAD + FILTER_SOURCE.replace('records_limit: 500', 'records_limit: 0') + JSONL_SINK,
    error: /source\.records_limit: must be > 0/,
    fix: /^set records_limit to an integer ≥ 1; records_limit: /,
  },
  {
    name: 'a negative records_limit',
    yaml: HEAD + FILTER_SOURCE.replace('records_limit: 500', 'records_limit: -20') + JSONL_SINK,
    error: /source\.records_limit: must be > 0/,
    fix: /^set records_limit to an integer ≥ 1; records_limit: /,
  },
  {
    name: 'a base_url that is not an http(s) URL',
    yaml: HEAD + 'source: { type: countries }\n' + JSONL_SINK,
    env: { SLUICE_BASE_URL: 'ftp://files.example', SLUICE_API_KEY: KEY },
    error: /service\.base_url: must be an http\(s\) URL/,
    fix: /^base_url: /,
  },
  {
    name: 'a pipeline name that would escape the state directory',
    yaml: HEAD.replace('name: bad_input', 'name: ../etc') + 'source: { type: countries }\n' + JSONL_SINK,
    error: /p\.yaml:2:7: name: must be letters, digits/,
    fix: /^name: /,
  },
  {
    name: 'a deep lookup query that does not start with "Find all"',
    yaml: HEAD + 'source: { type: deep_lookup, query: bakeries in Paris }\n' + JSONL_SINK,
    error: /source\.query: a deep lookup query starts with "Find all"/,
    fix: /^query: /,
  },
  {
    name: 'both a filter and a snapshot id',
    yaml: HEAD + FILTER_SOURCE + '  snapshot_id: snap_abc123\n' + JSONL_SINK,
    error: /source: set exactly one of `filter` .* or `snapshot_id`/,
    fix: /\S/,
  },
  {
    name: 'a merge sink without primary_key',
    yaml: HEAD + 'source: { type: countries }\nsink: { type: duckdb, path: w.duckdb, table: t, write: merge }\n',
    error: /sink\.primary_key: `write: merge` needs `primary_key`/,
    fix: /\S/,
  },
];

describe('a wrong pipeline file: file:line:column, what to change, nothing written', () => {
  it.each(configCases)('$name', async (c) => {
    const r = await run({ 'p.yaml': c.yaml }, ['run', '{p}', '--no-progress'], c.env ?? env());
    expectFailure(r, c.error, c.fix, EXIT_CODES.config);
    expect(r.stderr.at(-2)).toContain(r.ws.path('p.yaml'));
    expectNothingWritten(r.ws, r.before);
    // `validate` says the same, exit 1, and starts nothing either.
    const v = await cli(['validate', r.ws.path('p.yaml')], c.env ?? env());
    expect(v.code).toBe(1);
    const lines = [...v.stdout, ...v.stderr].map((l) => l.replace(/^error: /, '').replace(/^.*?(?=p\.yaml:)/, ''));
    expect(
      lines.some((l) => c.error.test(l) || c.error.test(`${r.ws.path('')}${l}`)),
      lines.join('\n'),
    ).toBe(true);
  });

  it('a pipeline file that does not exist', async () => {
    const r = await run({}, ['run', '{p}', '--no-progress']);
    expectFailure(
      r,
      /p\.yaml:1:1: cannot read the pipeline file: no such file$/,
      /^pass the path of a \.yaml file$/,
      EXIT_CODES.config,
    );
    expectNothingWritten(r.ws, r.before);
  });
});

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

/** Paid filter jobs the shared emulator started so far. */
const filterJobs = (e: EmulatorHandle = emu): number => e.stats.paid.filter ?? 0;

describe('filter files: checked before the paid filter job starts', () => {
  const withFile = (name: string, field = 'country_code') =>
    HEAD +
    FILTER_SOURCE.replace(
      "filter: { name: followers, operator: '>', value: 100 }",
      `filter: { name: ${field}, operator: in, value: ${name} }\n  files: [filters/${name}]`,
    ) +
    JSONL_SINK;

  // A missing file is a problem of the pipeline file, found when it is loaded (exit 2); a file that is there but
  // wrong is found when the filter is built, still before the paid job (exit 1).
  const cases: [string, Record<string, string>, RegExp, RegExp, number?][] = [
    [
      'a file listed in `files` that does not exist',
      { 'p.yaml': withFile('countries.csv') },
      /p\.yaml:11:11: source\.files\[0\]: no such file: .*filters\/countries\.csv$/,
      /^name a filter-values file .*; relative paths start at the pipeline file's directory \(.+\)$/,
      EXIT_CODES.config,
    ],
    [
      'a CSV filter file whose header is not the field',
      { 'p.yaml': withFile('countries.csv'), 'filters/countries.csv': 'country\nUS\nDE\n' },
      /^source\.files: countries\.csv is not a valid filter file: its header is "country", but the filter field is "country_code"$/,
      /^filter files are a CSV whose first line is the field name \("country_code"\)/,
    ],
    [
      'a CSV filter file with two columns',
      { 'p.yaml': withFile('countries.csv'), 'filters/countries.csv': 'country_code,name\nUS,United States\n' },
      /^source\.files: countries\.csv is not a valid filter file: its header is "country_code,name"/,
      /^filter files are a CSV/,
    ],
    [
      'a JSON filter file that is an object, not an array',
      { 'p.yaml': withFile('countries.json'), 'filters/countries.json': '{"country_code": "US"}' },
      /^source\.files: countries\.json is not a valid filter file: it holds a JSON object, not an array of objects$/,
      /or a JSON array of objects like \[\{"country_code": "…"\}\]$/,
    ],
    [
      'a JSON filter file that is an array of strings',
      { 'p.yaml': withFile('countries.json'), 'filters/countries.json': '["US", "DE"]' },
      /^source\.files: countries\.json is not a valid filter file: item 0 is not an object/,
      /a JSON array of objects/,
    ],
    [
      'a JSON filter file that is not JSON',
      { 'p.yaml': withFile('countries.json'), 'filters/countries.json': '[{"country_code": "US"' },
      /^source\.files: countries\.json is not a valid filter file: it is not valid JSON/,
      /a JSON array of objects/,
    ],
  ];
  it.each(cases)('%s', async (_name, files, error, fix, code) => {
    const paid = filterJobs();
    const r = await run(files);
    expectFailure(r, error, fix, code);
    expect(filterJobs()).toBe(paid);
    await expectNothingCommitted(r.ws, r.before);
  });
});

describe('the service says no: what it said, and which option to change', () => {
  it('a filter on a field the dataset does not have', async () => {
    const r = await run({
      'p.yaml': HEAD + FILTER_SOURCE.replace('name: followers', 'name: folowers') + JSONL_SINK,
    });
    expectFailure(
      r,
      new RegExp(`^the service refused the filter job on ${DATASET}: Field not found: .*folowers`),
      // The dataset publishes metadata: the fix guesses the field from it.
      new RegExp(
        `^fix the field name in source\\.filter \\(did you mean "followers"\\?\\): \`sluice datasets metadata ${DATASET}\` lists`,
      ),
    );
    await expectNothingCommitted(r.ws, r.before);
  });

  it('a wrong API key: 401, nothing paid', async () => {
    const paid = filterJobs();
    const r = await run({ 'p.yaml': HEAD + FILTER_SOURCE + JSONL_SINK }, undefined, {
      ...env(),
      SLUICE_API_KEY: 'not-the-key-1234',
    });
    // The preflight asks before anything is paid; the fix names the variable this pipeline reads the key from.
    expectFailure(
      r,
      /^the service refused the API key \(service\.api_key\): Invalid credentials$/,
      /^the API key was refused: set SLUICE_API_KEY to a valid key$/,
    );
    expect(r.stderr.join('\n')).not.toContain('not-the-key-1234');
    expect(filterJobs()).toBe(paid);
    await expectNothingCommitted(r.ws, r.before);
  });

  it('an unknown dataset', async () => {
    const r = await run({ 'p.yaml': HEAD + FILTER_SOURCE.replace(DATASET, 'gd_nosuchdataset9') + JSONL_SINK });
    expectFailure(
      r,
      /^dataset gd_nosuchdataset9 does not exist: it is not among the \d+ datasets the service lists$/,
      /^check source\.dataset_id: `sluice datasets list`/,
    );
    await expectNothingCommitted(r.ws, r.before);
  });

  it('an unknown snapshot id', async () => {
    const r = await run({
      'p.yaml': HEAD + 'source: { type: snapshot, snapshot_id: snap_nosuchsnap9 }\n' + JSONL_SINK,
    });
    expectFailure(r, /snap_nosuchsnap9.*404|404.*snap_nosuchsnap9/, /source\.snapshot_id/);
    await expectNothingCommitted(r.ws, r.before);
  });

  it('an unknown zone (serp)', async () => {
    const requests = emu.stats.routes['POST /request'] ?? 0;
    const r = await run({
      'p.yaml': HEAD + 'source: { type: serp, zone: no_such_zone, queries: [coffee], max_pages: 1 }\n' + JSONL_SINK,
    });
    expectFailure(
      r,
      /^zone "no_such_zone" does not exist in this account/,
      /^set source\.zone to one of the account's search zones: serp_zone$/,
    );
    // Found by the preflight: no search request was made.
    expect(emu.stats.routes['POST /request'] ?? 0).toBe(requests);
    await expectNothingCommitted(r.ws, r.before);
  });

  it('an unknown deep lookup request id', async () => {
    const r = await run({
      'p.yaml': HEAD + 'source: { type: deep_lookup, request_id: ai_nosuchrequest9 }\n' + JSONL_SINK,
    });
    expectFailure(r, /ai_nosuchrequest9.*404|404.*ai_nosuchrequest9/, /source\.request_id/);
    await expectNothingCommitted(r.ws, r.before);
  });
});

describe('snapshots that do not become ready', () => {
  it('still building when the poll times out: the message names the snapshot, a rerun resumes it', async () => {
    // 100 records scanned per emulated minute at real time: the job is still building long after the 0.3 s wait.
    const slow = await startEmulator({ apiKey: KEY, seed: 5, size: 2000, jobRecordsPerMinute: 100 });
    try {
      const yaml =
        HEAD +
        FILTER_SOURCE.replace('poll: { interval_ms: 20 }', 'poll: { interval_ms: 20, timeout_s: 0.3 }') +
        JSONL_SINK;
      const r = await run({ 'p.yaml': yaml }, undefined, env(slow));
      expectFailure(
        r,
        /^snapshot (snap_\w+) is still (scheduled|building) after 0\.3 s of waiting$/,
        /^run the same command again later: the run resumes with snapshot snap_\w+ and starts no new filter job/,
      );
      const id = /snapshot (snap_\w+)/.exec(r.stderr.at(-2)!)![1]!;
      expect(r.stderr.at(-1)).toContain(id);
      expect(filterJobs(slow)).toBe(1);
      // Nothing committed, but the paid job's id is kept: the rerun waits for the same snapshot.
      const inv = await inventory(r.ws, r.before);
      expect(inv.newDataFiles).toEqual([]);
      expect(Object.values(inv.manifestUnits).filter((n) => n > 0)).toEqual([]);
      expect(inv.completeRuns).toEqual([]);
      expect(inv.deadLetters).toBe(0);
      const again = await cli(['run', r.ws.path('p.yaml'), '--no-progress'], env(slow));
      expect(again.stderr.at(-2)).toContain(id);
      expect(filterJobs(slow)).toBe(1);
    } finally {
      await slow.close();
    }
  });

  it('cancelled at the 5-minute limit: the cause, and what to change', async () => {
    const cancelled = await startEmulator({
      apiKey: KEY,
      seed: 5,
      size: 2000,
      timeScale: 1000,
      jobRecordsPerMinute: 100,
    });
    try {
      const r = await run({ 'p.yaml': HEAD + FILTER_SOURCE + JSONL_SINK }, undefined, env(cancelled));
      expectFailure(
        r,
        /^snapshot snap_\w+ was canceled: Job was cancelled: it exceeded the 5-minute limit$/,
        /^the service cancels a filter job that runs longer than 5 minutes: narrow source\.filter or lower source\.records_limit/,
      );
      await expectNothingCommitted(r.ws, r.before);
    } finally {
      await cancelled.close();
    }
  });

  it('no record matches the filter: success with 0 rows and a warning, not an error', async () => {
    const r = await run({
      'p.yaml':
        HEAD +
        FILTER_SOURCE.replace("operator: '>', value: 100", "operator: '<', value: -1") +
        'sink: { type: duckdb, path: w.duckdb, table: companies }\n',
    });
    expect(r.code, r.stderr.join('\n')).toBe(0);
    expect(r.stderr.filter((l) => l.startsWith('error'))).toEqual([]);
    // The service says so up front (422): no job was started, nothing was charged.
    expect(r.stderr).toContainEqual(
      expect.stringMatching(
        /^warn: the service answered 422 "Provided filter did not match any records": nothing to load/,
      ),
    );
    expect(r.stdout).toContainEqual(expect.stringMatching(/^ {2}records {6}0$/));
    const db = r.ws.path('w.duckdb');
    const rows = await duckdbRows(db);
    // No data row anywhere; the run itself is recorded in the run history table (issue 11).
    expect(Object.entries(rows).filter(([table, n]) => n > 0 && table !== `${db}:main._sluice_runs`)).toEqual([]);
    expect(rows[`${db}:main._sluice_runs`]).toBe(1);
  });
});

/** A JSONL body with `good` records and malformed lines at the given line numbers (1-based). */
function jsonlWithBadLines(good: number, bad: Record<number, string>): { text: string; offsets: number[] } {
  const lines: string[] = [];
  const offsets: number[] = [];
  let at = 0;
  let n = 0;
  for (let line = 1; n < good || bad[line] !== undefined; line++) {
    const text = bad[line] ?? JSON.stringify({ id: ++n, name: `record ${n}` });
    if (bad[line] !== undefined) offsets.push(at);
    lines.push(text);
    at += Buffer.byteLength(text) + 1;
  }
  return { text: lines.join('\n') + '\n', offsets };
}

interface Letter {
  unit: string;
  stage: string;
  offset?: number;
  reason: string;
  raw?: string;
}

function letters(ws: Workspace): Letter[] {
  const file = ws.path('.sluice/bad_input/dead-letters.jsonl');
  return readFileSyncSafe(file)
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Letter);
}

function readFileSyncSafe(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

describe('malformed records inside a valid stream: dead letters, the run goes on and exits 0', () => {
  it('JSONL lines that are not JSON objects (file source into DuckDB: the native load falls back to JS)', async () => {
    const { text, offsets } = jsonlWithBadLines(8, { 3: '{"id": 99, "name": ', 6: '[1, 2]', 9: 'not json at all' });
    const r = await run({
      'p.yaml':
        HEAD +
        'source: { type: file, paths: [in.jsonl], format: jsonl }\nsink: { type: duckdb, path: w.duckdb, table: t }\n',
      'in.jsonl': text,
    });
    expect(r.code, r.stderr.join('\n')).toBe(0);
    // The count, then the reasons with how often each occurred.
    expect(r.stdout).toContainEqual(
      expect.stringMatching(
        /^ {2}dead letters 3 \(line is not valid JSON: [^;]+ ×1; line is an array, not a JSON object ×1; line is not valid JSON: [^;]+ ×1\)$/,
      ),
    );
    const rows = await duckdbRows(r.ws.path('w.duckdb'));
    expect(rows[`${r.ws.path('w.duckdb')}:main.t`]).toBe(8);
    const got = letters(r.ws);
    expect(got.map((d) => [d.stage, d.offset])).toEqual(offsets.map((o) => ['decode', o]));
    expect(got[0]!.reason).toMatch(/^line is not valid JSON: /);
    expect(got[1]!.reason).toBe('line is an array, not a JSON object');
    expect(got[1]!.raw).toBe('[1, 2]');
    // `sluice dead-letters` lists unit, stage, offset and reason.
    const list = await cli(['dead-letters', r.ws.path('p.yaml')], env());
    expect(list.stdout[0]).toBe('3 dead letters not yet replayed (bad_input)');
    expect(list.stdout).toContainEqual(
      expect.stringMatching(
        new RegExp(`file:.*in\\.jsonl.* decode @${offsets[1]}: line is an array, not a JSON object$`),
      ),
    );
  });

  it('CSV rows that do not parse', async () => {
    const r = await run({
      'p.yaml': HEAD + 'source: { type: file, paths: [in.csv], format: csv }\n' + JSONL_SINK,
      'in.csv': 'id,name\n1,one\n2,"two" x\n3,three\n',
    });
    expect(r.code, r.stderr.join('\n')).toBe(0);
    const got = letters(r.ws);
    expect(got).toHaveLength(1);
    expect(got[0]).toMatchObject({ stage: 'decode', offset: 14 });
    expect(got[0]!.reason).toMatch(/^CSV row 2: text after the closing quote/);
    const inv = await inventory(r.ws, r.before);
    expect(Object.values(inv.manifestUnits)).toEqual([1]);
    const out = inv.newDataFiles.map((f) => readFileSync(r.ws.path(f), 'utf8')).join('');
    expect(
      out
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as { id: unknown }).id),
    ).toEqual(['1', '3']);
  });

  it('JSON array elements that are not objects', async () => {
    const r = await run({
      'p.yaml': HEAD + 'source: { type: file, paths: [in.json], format: json }\n' + JSONL_SINK,
      'in.json': '[{"id": 1}, 42, {"id": 2}, "x", {"id": 3}]',
    });
    expect(r.code, r.stderr.join('\n')).toBe(0);
    const got = letters(r.ws);
    expect(got.map((d) => [d.offset, d.reason])).toEqual([
      [12, 'array element is a number, not a JSON object'],
      [27, 'array element is a string, not a JSON object'],
    ]);
  });

  it('broken records inside a snapshot download', async () => {
    const proxy = await corruptingProxy(emu, { 2: '{"company_id": "x", ', 5: '"just a string"' });
    try {
      const r = await run(
        { 'p.yaml': HEAD + FILTER_SOURCE + 'sink: { type: duckdb, path: w.duckdb, table: companies }\n' },
        undefined,
        env(proxy),
      );
      expect(r.code, r.stderr.join('\n')).toBe(0);
      const got = letters(r.ws);
      expect(got.map((d) => d.stage)).toEqual(['decode', 'decode']);
      expect(got[0]!.unit).toMatch(/^snapshot:snap_\w+:jsonl:bs1000:part:1$/);
      expect(got[0]!.offset).toBe(proxy.offsets[0]);
      expect(got[1]!.offset).toBe(proxy.offsets[1]);
      const rows = await duckdbRows(r.ws.path('w.duckdb'));
      expect(rows[`${r.ws.path('w.duckdb')}:main.companies`]).toBe(proxy.records - 2);
    } finally {
      await proxy.close();
    }
  });
});

describe('a download cut short on every attempt', () => {
  it('truncated gzip: after the retries, one line naming the unit and the byte offset', async () => {
    const cut = await startEmulator({
      apiKey: KEY,
      seed: 5,
      size: 2000,
      timeScale: 50,
      faults: { rules: [{ route: 'GET /datasets/snapshots/*/download', rate: 1, faults: { truncated_gzip: 1 } }] },
    });
    try {
      const yaml =
        HEAD +
        FILTER_SOURCE.replace('batch_size: 1000 }', 'batch_size: 1000, compress: true }') +
        'sink: { type: duckdb, path: w.duckdb, table: companies }\n';
      const r = await run({ 'p.yaml': yaml }, undefined, env(cut));
      expectFailure(
        r,
        /^snapshot:snap_\w+:jsonl:bs1000:part:1: truncated gzip input: .* at byte \d+$/,
        /^the unit was read 4 times and its bytes were cut short or corrupt every time/,
      );
      expect(cut.stats.faults.truncated_gzip).toBe(4);
      await expectNothingCommitted(r.ws, r.before);
    } finally {
      await cut.close();
    }
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

/**
 * A proxy in front of the emulator that replaces lines of every snapshot download (after gunzip) with the given
 * text, so a valid stream carries malformed records; `offsets` are their byte offsets in the decompressed part.
 */
async function corruptingProxy(
  target: EmulatorHandle,
  bad: Record<number, string>,
): Promise<{ url: string; offsets: number[]; records: number; close(): Promise<void> }> {
  const state = { offsets: [] as number[], records: 0 };
  const server: Server = createServer((req, res) => {
    const isDownload = req.method === 'GET' && /\/datasets\/snapshots\/[^/]+\/download/.test(req.url ?? '');
    if (!isDownload) {
      const up = httpRequest(
        { host: '127.0.0.1', port: target.port, method: req.method, path: req.url, headers: req.headers },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      req.pipe(up);
      return;
    }
    void (async () => {
      const answer = await fetch(`${target.url}${req.url}`, {
        headers: { authorization: req.headers.authorization ?? '' },
      });
      let body = Buffer.from(await answer.arrayBuffer());
      const gzipped = body[0] === 0x1f && body[1] === 0x8b;
      if (gzipped) body = gunzipSync(body);
      const lines = body.toString('utf8').split('\n');
      if (lines.at(-1) === '') lines.pop();
      state.offsets = [];
      let at = 0;
      const out = lines.map((l, i) => {
        const replaced = bad[i + 1] ?? l;
        if (bad[i + 1] !== undefined) state.offsets.push(at);
        at += Buffer.byteLength(replaced) + 1;
        return replaced;
      });
      state.records = lines.length;
      let sent = Buffer.from(out.join('\n') + '\n');
      if (gzipped) sent = gzipSync(sent);
      res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/jsonl' });
      res.end(sent);
    })().catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    get offsets() {
      return state.offsets;
    },
    get records() {
      return state.records;
    },
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
