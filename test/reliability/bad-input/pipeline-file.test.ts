/**
 * Bad-input corpus (see harness.ts): a wrong pipeline file is reported at file:line:column with what to change,
 * exit 2, and nothing is written.
 */
import { describe, expect, it } from 'vitest';
import { EXIT_CODES } from '../../../src/core/errors.js';
import { KEY, cli, expectFailure, expectNothingWritten } from './harness.js';
import { FILTER_SOURCE, HEAD, JSONL_SINK, env, run, useCorpus } from './corpus.js';

useCorpus();

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
    fix: /^registered sink types: duckdb, parquet, jsonl, postgres, clickhouse$/,
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
    // `validate` says the same, with the same exit code, and starts nothing either.
    const v = await cli(['validate', r.ws.path('p.yaml')], c.env ?? env());
    expect(v.code).toBe(EXIT_CODES.config);
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
