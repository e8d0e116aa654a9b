/**
 * The quick start (`npm start`: pipelines/company_profiles.yaml with `base_url: emulator`) killed at a random point
 * and started again resumes: the embedded emulator keeps its snapshots and paid counters beside the run state
 * (`<state dir>/emulator.json`), so the saved filter job is still known, no second one is paid for, and the table
 * ends with exactly the rows a clean run loads.
 *
 * The kill points are random but seeded (SLUICE_TEST_SEED, printed on failure), so a failing draw can be rerun.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { companyProfile } from '../../src/emulator/data/company-profiles.js';
import { readPaidCounters } from '../../src/emulator/state-file.js';
import { query, sluice, workspace, type Obj, type Result, lineSeen } from './harness.js';

// The quick start's own data: service.emulator in pipelines/company_profiles.yaml.
const SEED = 1;
const SIZE = 20_000;
const TEST_SEED = Number(process.env.SLUICE_TEST_SEED ?? 20261123);

/** mulberry32: a small seeded generator, so the kill points are reproducible. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Starts the quick start, and SIGKILLs it `afterMs` after it logged a line matching `after`. */
async function killedRun(cwd: string, after: RegExp, afterMs: number): Promise<Result> {
  const run = sluice(['run', 'pipelines/company_profiles.yaml', '--no-progress'], { cwd });
  await lineSeen(run, after);
  await new Promise((resolve) => setTimeout(resolve, afterMs));
  run.child.kill('SIGKILL');
  return run;
}

/** Whether the run recorded in a state file marked itself complete. */
function runCompleted(stateFile: string): boolean {
  const state = JSON.parse(readFileSync(stateFile, 'utf8')) as Record<string, unknown>;
  return state['run:complete'] === true;
}

/** The company ids the quick start's filter selects, from the generator (what a clean run loads: examples.test). */
function expectedIds(countriesFile: string): string[] {
  const countries = readFileSync(countriesFile, 'utf8').trim().split('\n').slice(1);
  const ids: string[] = [];
  for (let i = 0; i < SIZE; i++) {
    const p = companyProfile(SEED, i) as Obj;
    if (countries.includes(p.country_code) && Number(p.followers) >= 100) ids.push(p.company_id);
  }
  return ids;
}

describe('the quick start interrupted at a random point', () => {
  it(
    'resumes with the embedded emulator state: one paid filter job, every row once',
    { timeout: 180_000 },
    async () => {
      const rng = random(TEST_SEED);
      // First kill 0.3–3 s after the run opened: while the filter job is being started or built (the Ctrl-C the issue
      // reports). Second kill 0–6 s after the resumed run has its snapshot: while it waits for it, or downloads and
      // commits parts.
      const firstKillMs = Math.round(300 + rng() * 2700);
      const secondKillMs = Math.round(rng() * 6000);
      const draw = `SLUICE_TEST_SEED=${TEST_SEED}: kills ${firstKillMs} ms after the first run opened, ${secondKillMs} ms after the second had its snapshot`;
      const ws = workspace();
      const stateDir = path.join(ws.pipelines, '.sluice/company_profiles_nightly');
      const emulatorState = path.join(stateDir, 'emulator.json');

      const first = await killedRun(ws.dir, /^starting company_profiles_nightly/m, firstKillMs);
      expect(first.signal, `${draw}\n${first.stderr}`).toBe('SIGKILL');
      const runId = /starting company_profiles_nightly \(run (\S+)\)/.exec(first.stderr)?.[1];
      expect(runId, first.stderr).toBeDefined();

      const second = await killedRun(ws.dir, /filter job started|reusing snapshot/, secondKillMs);
      // On a quiet machine the second kill may land after the run committed its last unit and marked itself
      // complete (while it closes its sinks): that run is over, and the next invocation is tonight's next run.
      const secondCompleted = runCompleted(path.join(stateDir, 'state.json'));
      const third = await sluice(['run', 'pipelines/company_profiles.yaml', '--no-progress'], { cwd: ws.dir });
      const logs = `${draw}\n--- second\n${second.stderr}\n--- third\n${third.stderr}`;
      expect(third.code, logs).toBe(0);
      // The killed run is resumed under its own id, not started over.
      expect(second.stderr, logs).toContain(`resuming company_profiles_nightly (run ${runId})`);
      expect(third.stderr, logs).toContain(`resumed the embedded emulator's state from ${emulatorState}`);
      const started = [first, second, third].filter((r) => /filter job started: snapshot/.test(r.stderr));
      if (secondCompleted) {
        expect(third.stderr, logs).toMatch(/^starting company_profiles_nightly/m);
        expect(started, logs).toHaveLength(2);
        expect((await readPaidCounters(emulatorState)).filter, logs).toBe(2);
      } else {
        expect(third.stderr, logs).toContain(`resuming company_profiles_nightly (run ${runId})`);
        expect(third.stderr, logs).toMatch(/reusing snapshot snap_\w+ of the filter job started earlier/);
        expect(started, logs).toHaveLength(1);
        // Over the three processes (three embedded emulators), one filter job was paid for.
        expect((await readPaidCounters(emulatorState)).filter, logs).toBe(1);
      }

      const expected = expectedIds(ws.pipeline('filters/countries.csv'));
      expect(expected.length).toBeGreaterThan(1000); // several parts
      const warehouse = path.join(ws.out, 'warehouse.duckdb');
      const [row] = await query(`SELECT count(*) n, count(DISTINCT company_id) ids FROM w.company_profiles`, {
        duckdb: warehouse,
      });
      expect(row, logs).toEqual({ n: expected.length, ids: expected.length });
      const ids = await query(`SELECT company_id FROM w.company_profiles`, { duckdb: warehouse });
      expect(new Set(ids.map((x) => x.company_id))).toEqual(new Set(expected));
    },
  );
});
