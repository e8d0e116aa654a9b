/**
 * The nightly soak: every incremental source into every sink target, as deployed — one pipeline per source loading
 * all the targets at once — over emulated nights (the emulator's clock moved two days between them), the service
 * injecting faults into downloads, filter calls, status polls and crawl requests all along.
 *
 * - On the first nights, each target in turn fails mid-run (it refuses a unit, as a full disk would): the run fails,
 *   the cursor every sink committed stays behind the failing one, and the next run catches it up.
 * - Every KILL_EVERY-th night the snapshot's run is killed with -9 at a failpoint of one target's commit path (the
 *   targets and their failpoints in turn), and run again.
 * - After every night each target's table equals a full load of the same data (computed from the emulator's data),
 *   and the emulator's counters show that the night paid only for the new data: one filter job charging exactly the
 *   records collected since the last night; the review pages holding new reviews and one more; one new file read.
 *
 * `npm test` plays two nights (five failing sinks, a kill on the second, into Postgres: the first night loads, the
 * second pays for the new data only); `SLUICE_SOAK=full` (CI) thirty, with a kill every fifth night.
 *
 * Issue 21's Postgres promises are among these: `_sluice_state.checkpoint` stored (read from the column by the
 * target's `checkpoints`), the filter charging only the new records on nights 2 and 3, and the incremental review
 * crawl holding each review once in an `append` table.
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { committedList } from '../../../src/runtime/cursor.js';
import {
  DAY,
  NIGHT_1,
  failingRegistry,
  output,
  relocate,
  runHere,
  runKilled,
  scenarioDir,
  useService,
  writePipeline,
  type InProcessRun,
  type Service,
} from './harness.js';
import { NIGHTLY_SOURCES, SIZE, newRecords, reviewPages, type NightlySource } from './nightly.js';
import { duplicates } from './read.js';
import { TARGETS, useServers, type CommitFailpoint, type Output, type Target } from './targets.js';

const FULL = process.env.SLUICE_SOAK === 'full';
const NIGHTS = FULL ? 30 : 2;
const KILL_EVERY = FULL ? 5 : 2;

/** Faults on every route a night uses; the kinds on POST /request are refusals the service does not bill. */
const FAULTS = {
  rules: [
    { route: 'GET /datasets/snapshots/:id/download', rate: 0.25, faults: { reset: 1, truncated_gzip: 1, 502: 1 } },
    { route: 'POST /datasets/filter', rate: 0.3, faults: { 500: 1, reset_after: 1 } },
    { route: 'GET /datasets/snapshots/:id', rate: 0.15, faults: { 500: 1 } },
    // A 503, or the zone throttled for 10 emulated seconds (200 with x-brd-status-code 429, docs/service.md §5.6).
    { route: 'POST /request', rate: 0.1, faults: { 503: 1, sr_rate_limit: 1 }, throttle_s: 10 },
  ],
};
/** Reruns a night may need when faults outlast the retry budget: what cron's next attempt would do. */
const MAX_RERUNS = 2;

const servers = useServers();
const service = useService({ size: SIZE, faults: FAULTS });

interface NightFigure {
  night: number;
  source: string;
  rows: number;
  fresh: number;
  paid: number;
  failed?: string;
  killed?: string;
  reruns: number;
}

describe(`nightly soak: ${NIGHTS} nights × ${NIGHTLY_SOURCES.length} incremental sources × ${TARGETS.length} sink targets`, () => {
  it(
    'every night each table equals a full load and the night paid only for the new data, through failing sinks and kill -9',
    { timeout: FULL ? 3_600_000 : 600_000 },
    async () => {
      const figures = await soak(service);
      console.log(
        `soak over ${TARGETS.map((t) => t.name).join(', ')}:\n` +
          figures
            .map(
              (f) =>
                `  night ${f.night} ${f.source}: ${f.rows} rows in each table, ${f.fresh} new, paid ${f.paid}` +
                `${f.failed ? `, ${f.failed} failed mid-run` : ''}${f.killed ? `, killed at ${f.killed}` : ''}` +
                `${f.reruns ? `, ${f.reruns} rerun(s)` : ''}`,
            )
            .join('\n'),
      );
    },
  );
});

async function soak(svc: Service): Promise<NightFigure[]> {
  let dir = scenarioDir('soak');
  const names = new Map(
    NIGHTLY_SOURCES.flatMap((s) => TARGETS.map((t) => [`${s.name}/${t.name}`, output(dir, t, servers, s.name).name])),
  );
  const outputOf = (s: NightlySource, t: Target): Output => ({ dir, name: names.get(`${s.name}/${t.name}`)!, servers });
  for (const s of NIGHTLY_SOURCES)
    writePipeline(dir, svc, {
      name: `soak_${s.name}`,
      source: s.source,
      ...(s.transforms && { transforms: s.transforms }),
      sinks: TARGETS.map((t) => t.sink(outputOf(s, t))),
    });

  const figures: NightFigure[] = [];
  let previous: number | undefined;
  let failures = 0;
  // Nights on which another sink committed a unit the failing one did not (see cursorBehind).
  let behind = 0;
  for (let night = 1; night <= NIGHTS; night++) {
    const at = NIGHT_1 + (night - 1) * 2 * DAY;
    await svc.clock(at);
    const kill = night % KILL_EVERY === 0;
    // The run to be killed is a child: it must be able to open what earlier runs in this process wrote.
    if (kill) dir = relocate(dir);
    for (const s of NIGHTLY_SOURCES) {
      s.prepare?.(dir, night);
      const file = path.join(dir, `soak_${s.name}.yaml`);
      const label = `night ${night} ${s.name}`;
      const before = await svc.counters();
      const figure: NightFigure = { night, source: s.name, rows: 0, fresh: 0, paid: 0, reruns: 0 };

      if (kill && s.name === 'snapshot') {
        const target = TARGETS[(night / KILL_EVERY) % TARGETS.length]!;
        const failpoints = target.failpoints.append;
        const failpoint = plain(failpoints[Math.floor(night / KILL_EVERY / TARGETS.length) % failpoints.length]!);
        figure.killed = failpoint;
        const killed = await runKilled(file, failpoint);
        expect(killed.died, `${label}: ${killed.endedAs}\n${killed.stderr}`).toBe(true);
        // What readers see right after the kill: nothing twice, nothing a full load would not hold.
        const full = new Set(s.fullLoad(at, dir));
        for (const t of TARGETS) {
          const seen = s.loaded(await t.rows(outputOf(s, t)));
          expect(duplicates(seen), `${label} ${t.name}`).toEqual([]);
          expect(
            seen.filter((r) => !full.has(r)),
            `${label} ${t.name}`,
          ).toEqual([]);
        }
      } else if (!kill || failures < TARGETS.length) {
        // A target refuses a unit (its second when the source has several tonight): the others commit it.
        const target = TARGETS[failures++ % TARGETS.length]!;
        figure.failed = target.name;
        const several = (s.name === 'snapshot' && night === 1) || s.name === 'reviews';
        const name = outputOf(s, target).name;
        const failed = await runHere(
          file,
          {},
          { registry: failingRegistry([{ type: target.type, output: name, failAt: several ? 2 : 1 }]) },
        );
        expect(String(failed.error), label).toMatch(/no space left on device/);
        if ((await cursorBehind(s, target, outputOf)) > 0) behind++;
      }

      let run: InProcessRun = await runHere(file);
      while (run.error !== undefined && figure.reruns < MAX_RERUNS) {
        figure.reruns++;
        run = await runHere(file);
      }
      expect(run.error, `${label}: ${String(run.error)}\n${run.log.join('\n')}`).toBeUndefined();

      const expected = s.fullLoad(at, dir);
      for (const t of TARGETS) expect(s.loaded(await t.rows(outputOf(s, t))), `${label} ${t.name}`).toEqual(expected);
      figure.rows = expected.length;
      figure.fresh = expected.length - (figures.findLast((f) => f.source === s.name)?.rows ?? 0);
      const after = await svc.counters();
      if (s.name === 'snapshot') {
        figure.paid = after.records_charged - before.records_charged;
        // One filter job a night, whatever the faults, the failing sink and the kill: the new records only.
        expect(after.paid.filter! - (before.paid.filter ?? 0), label).toBe(1);
        expect(figure.fresh, label).toBe(newRecords(at, previous));
        expect(figure.paid, label).toBe(figure.fresh);
        // The cursor the next night starts from is committed with the rows, in each sink's own store.
        for (const t of TARGETS) {
          const newest = [...(await t.checkpoints(outputOf(s, t), `soak_${s.name}`)).values()]
            .map((c) => Date.parse(String((c as { max: string }).max)))
            .sort((a, b) => b - a)[0];
          expect(newest, `${label} ${t.name}`).toBe(Math.max(...expected.map((r) => Date.parse(r.split(' ')[1]!))));
        }
      } else if (s.name === 'reviews') {
        // The emulator bills pages answered only, as the service does: its refusals (the faults above) are free.
        figure.paid = after.requests - before.requests;
        // A sink that failed gets its pages read again: exact only on a night without one.
        if (figure.failed === undefined && figure.reruns === 0)
          expect(figure.paid, label).toBe(reviewPages(at, previous));
        else expect(figure.paid, label).toBeGreaterThanOrEqual(reviewPages(at, previous));
      } else {
        // The night's new file only.
        figure.paid = run.summary!.units.total;
        expect(figure.paid, label).toBe(1);
      }
      figures.push(figure);
    }
    previous = at;
  }
  // Some failing sink was left behind another that committed a unit it refused, and the cursor waited for it.
  if (failures > 0) expect(behind).toBeGreaterThan(0);
  return figures;
}

/**
 * After `target` failed mid-run: the cursor every sink committed (what the next run would plan from) lacks each unit
 * that another target committed and `target` did not. Returns how many such units there are: the run stops at the
 * first refusal, so whether the others committed the refused unit before it stopped depends on timing; the soak
 * checks that it happened on some night.
 */
async function cursorBehind(
  s: NightlySource,
  target: Target,
  outputOf: (s: NightlySource, t: Target) => Output,
): Promise<number> {
  const pipeline = `soak_${s.name}`;
  const perSink = await Promise.all(TARGETS.map((t) => t.checkpoints(outputOf(s, t), pipeline)));
  const mine = perSink[TARGETS.indexOf(target)]!;
  const ahead = perSink.flatMap((m) => [...m.keys()]).filter((id) => !mine.has(id));
  // The cursor is made of the units every sink committed (runtime/cursor.ts): none the failing sink lacks.
  const everywhere = new Set(committedList(perSink).map((c) => `${c.run}/${c.unit}`));
  expect(
    ahead.filter((id) => everywhere.has(id)),
    `${target.name} is behind the others`,
  ).toEqual([]);
  return ahead.length;
}

/** The failpoint's first hit: a night's run may commit a single unit. */
function plain(f: CommitFailpoint): CommitFailpoint {
  return f.split('=')[0] as CommitFailpoint;
}
