/**
 * Preflight through the real CLI: `validate` finds a missing file and a merge key that is not a column at the
 * value's file:line:column; `plan` (and `run`, before its first paid call) finds a zone typo, a zone of the wrong
 * type, an unknown dataset / snapshot / lookup request and a refused key against the service, and the emulator's
 * counters prove that nothing was paid; an unreachable base_url fails with `cannot reach …`, not after minutes.
 * The CLI runs in this process (sluiceInProcess): nothing here needs a process of its own.
 */
import { createServer } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { EmulatorHandle } from '../../src/emulator/server.js';
import { emulator, sluiceInProcess, variant, workspace, type Workspace } from './harness.js';

let emu: EmulatorHandle;
let ws: Workspace;
beforeAll(async () => {
  emu = await emulator({ seed: 5 });
  ws = workspace();
});
afterAll(() => emu?.close());
beforeEach(() => emu.stats.reset());

/** No paid job and no page fetched: only free reads reached the service. */
function expectNothingPaid(): void {
  expect(emu.stats.paid).toEqual({});
  expect(emu.stats.routes['POST /request']).toBeUndefined();
  expect(emu.stats.routes['POST /datasets/filter']).toBeUndefined();
  expect(emu.stats.routes['POST /datasets/deep_lookup/v1/trigger']).toBeUndefined();
}

/** The line of `text` (1-based) that contains `needle`, and the column where it starts. */
function positionOf(text: string, needle: string): string {
  const lines = text.split('\n');
  const i = lines.findIndex((l) => l.includes(needle));
  if (i < 0) throw new Error(`${needle} not in the pipeline`);
  return `${i + 1}:${lines[i]!.indexOf(needle) + 1}`;
}

describe('sluice validate: what can be checked without the service', () => {
  it('a missing queries_file, at file:line:column of the value', async () => {
    const text = variant(ws, 'serp.yaml', [
      [/queries: \[.*\]/, 'queries_file: queries/tonight.txt'],
      ['name: serp_organic', 'name: serp_missing_file'],
    ]);
    const file = ws.write('serp-missing-file.yaml', text);
    const r = await sluiceInProcess(['validate', file]);
    expect(r.code).not.toBe(0);
    expect(r.stdout).toContain(
      `${file}:${positionOf(text, 'queries/tonight.txt')}: source.queries_file: no such file: ${ws.pipelines}/queries/tonight.txt`,
    );
    expect(r.stdout).toMatch(
      / {2}fix: name the queries to search; relative paths start at the pipeline file's directory/,
    );
  });

  it('a merge key that is not an output column, at file:line:column of the key', async () => {
    const text = variant(ws, 'serp.yaml', [['primary_key: [query, link]', 'primary_key: [query, lnk]']]);
    const file = ws.write('serp-bad-key.yaml', text);
    const r = await sluiceInProcess(['validate', file]);
    expect(r.code).not.toBe(0);
    expect(r.stdout).toContain(
      `${file}:${positionOf(text, 'lnk]')}: sink.primary_key[1]: "lnk" is not a column of the rows this sink receives (did you mean "link"?)`,
    );
  });
});

describe('sluice validate: a paid filter job without a cap', () => {
  it('is refused at source.records_limit, with the fix; `uncapped: true` says the user wants one', async () => {
    const text = variant(ws, 'company_profiles.yaml', [
      ['  records_limit: 50000\n', ''],
      ['name: company_profiles_nightly', 'name: uncapped_job'],
    ]);
    const file = ws.write('uncapped.yaml', text);
    const r = await sluiceInProcess(['validate', file]);
    expect(r.code).not.toBe(0);
    expect(r.stdout).toContain(
      `${file}:${positionOf(text, 'type: snapshot')}: source.records_limit: a filter job needs \`records_limit\`: the service charges for every record it places in the snapshot, and without a limit nothing caps that`,
    );
    expect(r.stdout).toMatch(/ {2}fix: set source\.records_limit to the most records .*or set `uncapped: true`/);
    // The same check stops `run` before any call to the service.
    const run = await sluiceInProcess(['run', file], { service: emu });
    expect(run.code).toBe(2);
    expect(emu.stats.routes).toEqual({});

    const opted = ws.write('opted.yaml', text.replace('  files: [', '  uncapped: true\n  files: ['));
    expect((await sluiceInProcess(['validate', opted])).code).toBe(0);
  });
});

describe('sluice plan: checked against the service, nothing paid', () => {
  const cases: [string, string, [string | RegExp, string][], RegExp, RegExp][] = [
    [
      'a zone typo',
      'serp.yaml',
      [['zone: serp_zone', 'zone: serp_zon']],
      /zone "serp_zon" does not exist in this account \(did you mean "serp_zone"\?\)/,
      /fix: set source\.zone to one of the account's search zones: serp_zone/,
    ],
    [
      'a zone of the wrong type',
      'reviews.yaml',
      [['zone: serp_zone', 'zone: static_zone']],
      /zone "static_zone" is of type static: it cannot fetch search or review pages/,
      /fix: set source\.zone to a zone of type serp or unblocker: serp_zone/,
    ],
    [
      'an unknown dataset',
      'company_profiles.yaml',
      [['dataset_id: gd_l1vikfnt1wgvvqz95w', 'dataset_id: gd_nosuchdataset1']],
      /dataset gd_nosuchdataset1 does not exist/,
      /fix: check source\.dataset_id: `sluice datasets list`/,
    ],
    [
      'an unknown snapshot',
      'company_profiles.yaml',
      [[/ {2}dataset_id: [\s\S]*?records_limit: 50000\n/, '  snapshot_id: snap_nosuchsnapshot1\n']],
      /snapshot snap_nosuchsnapshot1 does not exist/,
      /fix: check source\.snapshot_id/,
    ],
    [
      'an unknown deep lookup request',
      'deep_lookup.yaml',
      [[/ {2}query: .*\n/, '  request_id: ai_nosuchrequest1\n']],
      /deep lookup request ai_nosuchrequest1 does not exist/,
      /fix: check source\.request_id/,
    ],
  ];

  it.each(cases)('%s', async (_name, example, replace, message, fix) => {
    const file = ws.write(`plan-${example}`, variant(ws, example, replace));
    const r = await sluiceInProcess(['plan', file], { service: emu });
    expect(r.code, r.stdout).not.toBe(0);
    expect(r.stderr).toMatch(message);
    expect(r.stderr).toMatch(fix);
    expectNothingPaid();
  });

  it('a refused key', async () => {
    const r = await sluiceInProcess(['plan', ws.pipeline('serp.yaml')], {
      service: emu,
      env: { SLUICE_API_KEY: 'not-the-key' },
    });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/the service refused the API key \(service\.api_key\): Invalid credentials/);
    expectNothingPaid();
  });
});

describe('sluice run: the same preflight before the first paid call', () => {
  it('a zone typo fails the run before any page is requested', async () => {
    const text = variant(ws, 'serp.yaml', [
      ['zone: serp_zone', 'zone: serp_zon'],
      ['name: serp_organic', 'name: serp_run_typo'],
      ['warehouse.duckdb', 'run-typo.duckdb'],
    ]);
    const file = ws.write('run-typo.yaml', text);
    const r = await sluiceInProcess(['run', file], { service: emu });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/zone "serp_zon" does not exist in this account/);
    expectNothingPaid();
    expect(emu.stats.routes['GET /zone/get_active_zones']).toBe(1);
  });
});

describe('an unreachable base_url', () => {
  let port: number;
  beforeAll(async () => {
    // A port that was free a moment ago: connecting to it is refused.
    const s = createServer();
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
    port = (s.address() as { port: number }).port;
    await new Promise<void>((r) => s.close(() => r()));
  });

  it.each(['plan', 'run'])('%s fails with `cannot reach <url>` and a fix line', async (command) => {
    const url = `http://127.0.0.1:${port}`;
    const text = variant(ws, 'serp.yaml', [
      ['name: serp_organic', `name: serp_unreachable_${command}`],
      // Quick tries quicker: the default backoff would wait seconds between them (the waits themselves:
      // test/client/first-contact.test.ts); the number of tries is the same.
      [/api_key: (.*)\n/, 'api_key: $1\n  retry: { base_delay_ms: 10, max_delay_ms: 20 }\n'],
    ]);
    const file = ws.write(`unreachable-${command}.yaml`, text);
    const r = await sluiceInProcess([command, file], { env: { SLUICE_BASE_URL: url, SLUICE_API_KEY: 'k' } });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(new RegExp(`cannot reach ${url.replace(/\./g, '\\.')}: .*ECONNREFUSED`));
    expect(r.stderr).toMatch(/fix: check service\.base_url \(http:\/\/127\.0\.0\.1:\d+\)/);
    // One first contact of a few quick tries, not the client's retries times the engine's unit attempts.
    expect(r.stderr.match(/retrying /g)?.length ?? 0).toBeLessThanOrEqual(4);
  });
});
