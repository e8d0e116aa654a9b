/**
 * `sluice runs` with the real CLI (issue 11): one run of a SERP pipeline interrupted (SIGINT), resumed into a
 * failure (the service refuses a page), resumed again to success — and the history lists the three attempts newest
 * first, with status, cause, exit code and what each committed, as a table and as JSON.
 *
 * The run is held mid-run deterministically: a recording proxy in front of the emulator keeps its request for one
 * SERP page unanswered (or answers it with an error) on cue. The interrupted attempt is a process of its own (it gets
 * SIGINT); the later commands run the CLI in this process (sluiceInProcess).
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  emulatorBehindProxy,
  HELD_PAGE,
  holdPage,
  pageOf,
  query,
  serpCrawl,
  sluice,
  sluiceInProcess,
  workspace,
} from './harness.js';

const served = emulatorBehindProxy({ seed: 17 });

// A held read is abandoned when the interrupt's grace is spent: a short one (8 s: the CLI exits at its end, and the abandoned run still writes its history in the last 1.6 s).
const PIPELINE = `${serpCrawl('nightly', [
  '{ type: jsonl, path: out/nightly_jsonl }',
  '{ type: duckdb, path: out/nightly.duckdb, table: serp_organic }',
])}limits: { interrupt_grace_s: 8 }\n`;

describe('sluice runs', () => {
  it('lists an interrupted, a failed and a resumed successful attempt of one run, newest first', async () => {
    const ws = workspace();
    const file = ws.write('nightly.yaml', PIPELINE);
    const run = () => sluiceInProcess(['run', file, '--no-progress'], { service: served.proxy });

    // 1. Interrupted: page 2 is held unanswered, then Ctrl-C.
    const gate = holdPage(served.proxy);
    const first = sluice(['run', file, '--no-progress'], { service: served.proxy });
    // A run that never asks for page 2 would leave the test waiting: fail it with what the run said instead.
    await Promise.race([
      gate.reached,
      first.then((r) => {
        throw new Error(`the run ended before asking for ${HELD_PAGE}: ${r.stderr}`);
      }),
    ]);
    first.child.kill('SIGINT');
    const r1 = await first;
    gate.drop();
    expect(r1.code, r1.stderr).toBe(130);

    // 2. Failed: the service refuses page 2 (a 4xx is not retried).
    served.proxy.intercept = (r, res) => {
      if (pageOf(r) !== HELD_PAGE) return false;
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: 'query rejected by the test' }));
      return true;
    };
    const r2 = await run();
    expect(r2.code, r2.stderr).toBe(1);

    // 3. Resumed to success.
    served.proxy.intercept = undefined;
    const r3 = await run();
    expect(r3.code, r3.stderr).toBe(0);

    const json = await sluiceInProcess(['runs', file, '--json'], { service: served.proxy });
    expect(json.code, json.stderr).toBe(0);
    const runs = json.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, any>);
    expect(runs.map((r) => [r.attempt, r.status, r.exitCode, r.resumed])).toEqual([
      [3, 'succeeded', 0, true],
      [2, 'failed', 1, true],
      [1, 'interrupted', 130, false],
    ]);
    expect(new Set(runs.map((r) => r.run)).size).toBe(1);
    expect(runs[2]!.cause).toMatch(/^interrupted: \d+\/\d+ units committed; run again to resume$/);
    expect(runs[1]!.cause).toMatch(/400/);
    expect(runs[0]!.cause).toBeUndefined();
    // Every unit was committed exactly once over the three attempts, into both sinks.
    const committed = runs.reduce((n, r) => n + r.units.committed, 0);
    expect(committed).toBe(runs[0]!.units.total);
    expect(runs[0]!.units.skipped + runs[0]!.units.committed).toBe(runs[0]!.units.total);
    for (const r of runs) {
      expect(r.sinks.map((s: { sink: string }) => s.sink)).toEqual([
        expect.stringMatching(/^jsonl .*nightly_jsonl$/),
        expect.stringMatching(/^duckdb .*nightly\.duckdb table serp_organic$/),
      ]);
      expect(r.sinks.map((s: { committedUnits: number }) => s.committedUnits)).toEqual([
        r.units.committed,
        r.units.committed,
      ]);
      expect(Date.parse(r.endedAt)).toBeGreaterThanOrEqual(Date.parse(r.startedAt));
    }
    expect(runs[0]!.records).toBeGreaterThan(0);

    const table = await sluiceInProcess(['runs', file], { service: served.proxy });
    expect(table.code, table.stderr).toBe(0);
    const rows = table.stdout.split('\n').filter((l) => /^\d{17}-/.test(l));
    expect(rows.map((l) => /\s(succeeded|failed|interrupted)( \(resumed\))?\s/.exec(l)?.[0].trim())).toEqual([
      'succeeded (resumed)',
      'failed (resumed)',
      'interrupted',
    ]);
    expect(table.stdout).toMatch(/^ {4}cause: .*400.* \(exit 1\)$/m);
    expect(table.stdout).toMatch(/^ {4}cause: interrupted: .* \(exit 130\)$/m);

    // The DuckDB file keeps its own record of the run: one row, the attempts that wrote to it added up.
    const duckdb = path.join(ws.pipelines, 'out/nightly.duckdb');
    const loads = await query(
      'SELECT pipeline, table_name, run_id, status, attempts, units::INT units, records::INT records, started_at <= ended_at ordered FROM w._sluice_runs',
      { duckdb },
    );
    const wrote = runs.filter((r) => r.units.committed > 0);
    expect(loads).toEqual([
      {
        pipeline: 'nightly',
        table_name: 'serp_organic',
        run_id: runs[0]!.run,
        status: 'complete',
        attempts: wrote.length + (runs[0]!.units.committed > 0 ? 0 : 1),
        units: committed,
        records: runs.reduce((n, r) => n + r.records, 0),
        ordered: true,
      },
    ]);
    const stored = await query('SELECT count(*)::INT n FROM w.serp_organic', { duckdb });
    expect(stored[0]!.n).toBe(loads[0]!.records);
  });
});
