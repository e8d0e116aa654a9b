/**
 * The quick start (`npm start`: pipelines/company_profiles.yaml with `base_url: emulator`) killed and started again
 * resumes: the embedded emulator keeps its snapshots and paid counters beside the run state
 * (`<state dir>/emulator.json`), so the saved filter job is still known, no second one is paid for, and the table
 * ends with exactly the rows a clean run loads.
 *
 * The kills strike at failpoints (src/core/failpoints.ts: the process SIGKILLs itself on the spot), drawn from a seed
 * (SLUICE_TEST_SEED, printed on failure): the first while the paid filter job is being started (the Ctrl-C the issue
 * reports), the second after the resumed run has its snapshot, while it downloads and commits parts. A kill timed by
 * the wall clock could land after the run had finished on a fast machine; a failpoint is hit wherever the machine's
 * speed puts it.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { FailpointName } from '../../src/core/failpoints.js';
import { companyProfile } from '../../src/emulator/data/company-profiles.js';
import { readPaidCounters } from '../../src/emulator/state-file.js';
import { query, sluice, workspace, type Obj } from './harness.js';

// The quick start's own data: service.emulator in pipelines/company_profiles.yaml.
const SEED = 1;
const SIZE = 20_000;
/** Its filter selects 10,756 of them: 11 parts of `batch_size: 1000`. */
const PARTS = 11;
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

/** The first kill: on either side of the paid job's checkpoint. */
const FIRST_KILLS: readonly FailpointName[] = ['snapshot:job-started', 'snapshot:job-checkpointed'];

/** The second kill, given a draw in [0, 1): inside a part's download, or around the commit of one of the parts. */
function secondKill(draw: () => number): string {
  const part = 1 + Math.floor(draw() * PARTS);
  const kills = [
    // Bytes of one part's compressed body: every part has more than this.
    `download:body=${1 + Math.floor(draw() * 32_768)}`,
    `duckdb:after-data=${part}`,
    `engine:after-commit=${part}`,
  ];
  return kills[Math.floor(draw() * kills.length)]!;
}

/** The quick start, killed by the failpoint `failpoint`. */
function killedRun(cwd: string, failpoint: string): ReturnType<typeof sluice> {
  return sluice(['run', 'pipelines/company_profiles.yaml', '--no-progress'], {
    cwd,
    env: { SLUICE_FAILPOINTS: failpoint },
  });
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

describe('the quick start interrupted twice', () => {
  it(
    'resumes with the embedded emulator state: one paid filter job, every row once',
    { timeout: 180_000 },
    async () => {
      const rng = random(TEST_SEED);
      const firstKill = FIRST_KILLS[Math.floor(rng() * FIRST_KILLS.length)]!;
      const second = secondKill(rng);
      const draw = `SLUICE_TEST_SEED=${TEST_SEED}: the first run killed at ${firstKill}, the second at ${second}`;
      const ws = workspace();
      const emulatorState = path.join(ws.pipelines, '.sluice/company_profiles_nightly/emulator.json');

      const first = await killedRun(ws.dir, firstKill);
      expect(first.signal, `${draw}\n${first.stderr}`).toBe('SIGKILL');
      const runId = /starting company_profiles_nightly \(run (\S+)\)/.exec(first.stderr)?.[1];
      expect(runId, first.stderr).toBeDefined();

      const resumed = await killedRun(ws.dir, second);
      expect(resumed.signal, `${draw}\n${resumed.stderr}`).toBe('SIGKILL');
      const third = await sluice(['run', 'pipelines/company_profiles.yaml', '--no-progress'], { cwd: ws.dir });
      const logs = `${draw}\n--- first\n${first.stderr}\n--- second\n${resumed.stderr}\n--- third\n${third.stderr}`;
      expect(third.code, logs).toBe(0);
      // The killed run is resumed under its own id, twice, not started over.
      for (const r of [resumed, third]) {
        expect(r.stderr, logs).toContain(`resuming company_profiles_nightly (run ${runId})`);
        expect(r.stderr, logs).toContain(`resumed the embedded emulator's state from ${emulatorState}`);
      }
      expect(third.stderr, logs).toMatch(/reusing snapshot snap_\w+ of the filter job started earlier/);
      // Over the three processes (three embedded emulators), one filter job was paid for.
      expect((await readPaidCounters(emulatorState)).filter, logs).toBe(1);

      const expected = expectedIds(ws.pipeline('filters/countries.csv'));
      expect(expected).toHaveLength(10_756);
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
