/**
 * Interrupts with the real CLI (issue 11, "Interrupts are clean"): SIGINT or SIGTERM mid-run stops the run, says how
 * many units were committed, exits 130 or 143, and the next run resumes from there; a second Ctrl-C does not wait.
 *
 * The run is held mid-run deterministically: a recording proxy in front of the emulator keeps the request for one
 * SERP page unanswered until the signal is sent.
 */
import { describe, expect, it } from 'vitest';
import {
  emulatorBehindProxy,
  holdPage,
  lineSeen,
  pageOf,
  serpCrawl,
  sluice,
  workspace,
  type HeldPage,
  type SluiceRun,
} from './harness.js';

const served = emulatorBehindProxy({ seed: 31 });

const PIPELINE = serpCrawl('interrupted', ['{ type: jsonl, path: out/interrupted }'], { normalize: false });
const PAGE_ONE = 'coffee roasters portland@0';
const INTERRUPTED = /^interrupted: (\d+)\/(\d+) units committed; run again to resume$/m;

/** Starts a run whose request for page 2 is held unanswered; resolves once that request arrived. */
async function heldRun(file: string): Promise<{ run: SluiceRun; gate: HeldPage }> {
  const gate = holdPage(served.proxy);
  const run = sluice(['run', file, '--no-progress'], { service: served.proxy });
  await Promise.race([gate.reached, run]);
  return { run, gate };
}

describe('an interrupted run', () => {
  it('SIGINT: says what was committed, exits 130, and the next run resumes without redoing it', async () => {
    const ws = workspace();
    const file = ws.write('interrupted.yaml', PIPELINE);
    served.proxy.seen.length = 0;

    const { run, gate } = await heldRun(file);
    run.child.kill('SIGINT');
    const r1 = await run;
    gate.drop();
    expect(r1.signal, r1.stderr).toBeNull();
    expect(r1.code, r1.stderr).toBe(130);
    // Said at once, then the outcome as the last line.
    expect(r1.stderr).toMatch(/SIGINT: stopping: no new units, commits in flight finish/);
    const outcome = r1.stderr.trimEnd().split('\n').at(-1)!;
    const [, committed] = INTERRUPTED.exec(outcome) ?? [];
    expect(outcome, r1.stderr).toMatch(INTERRUPTED);
    // Page 1 was committed before page 2 was asked for (concurrency 1).
    expect(Number(committed)).toBeGreaterThanOrEqual(1);

    const r2 = await sluice(['run', file, '--no-progress'], { service: served.proxy });
    expect(r2.code, r2.stderr).toBe(0);
    expect(r2.stderr).toMatch(/^resuming interrupted/m);
    expect(r2.stdout).toMatch(new RegExp(`\\(${committed} already committed, 0 failed\\)`));
    // The committed page was not fetched again.
    expect(served.proxy.seen.filter((r) => pageOf(r) === PAGE_ONE)).toHaveLength(1);
  });

  it('SIGTERM (a scheduler stopping the job): exits 143 with the same message', async () => {
    const ws = workspace();
    const file = ws.write('interrupted.yaml', PIPELINE);
    const { run, gate } = await heldRun(file);
    run.child.kill('SIGTERM');
    const r = await run;
    gate.drop();
    expect(r.code, r.stderr).toBe(143);
    expect(r.stderr).toMatch(/SIGTERM: stopping/);
    expect(r.stderr.trimEnd().split('\n').at(-1)).toMatch(INTERRUPTED);
  });

  it('a second Ctrl-C is never fatal by signal: the process exits 130 itself, saying so', async () => {
    const ws = workspace();
    const file = ws.write('interrupted.yaml', PIPELINE);
    const { run, gate } = await heldRun(file);
    run.child.kill('SIGINT');
    await lineSeen(run, /SIGINT: stopping/);
    run.child.kill('SIGINT');
    const r = await run;
    gate.drop();
    expect(r.signal, r.stderr).toBeNull();
    expect(r.code, r.stderr).toBe(130);
    // Whichever came first, the run winding down or the second signal, the last line says what to do.
    expect(r.stderr.trimEnd().split('\n').at(-1)).toMatch(
      /^(interrupted: \d+\/\d+ units committed; run again to resume|SIGINT: exiting at once; committed units are kept, run again to resume)$/,
    );
  });
});
