/**
 * Bad-input corpus (see harness.ts): filter files checked before the paid job starts, the service saying no, and
 * snapshots that do not become ready.
 */
import { describe, expect, it } from 'vitest';
import { EXIT_CODES } from '../../../src/core/errors.js';
import { startEmulator } from '../../../src/emulator/server.js';
import { KEY, cli, duckdbRows, expectFailure, expectNothingCommitted, inventory } from './harness.js';
import { DATASET, FILTER_SOURCE, HEAD, JSONL_SINK, emu, env, filterJobs, run, useCorpus } from './corpus.js';

useCorpus();

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
      EXIT_CODES.config,
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
      EXIT_CODES.config,
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
      EXIT_CODES.config,
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
