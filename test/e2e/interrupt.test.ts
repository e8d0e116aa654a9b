/**
 * Interrupts with the real CLI (issue 11, "Interrupts are clean"; issue 23, "Interrupts that end"): SIGINT or
 * SIGTERM mid-run stops the run, says how many units were committed, exits 130 or 143, and the next run resumes from
 * there; a second Ctrl-C does not wait. A unit in flight may commit within the grace (`limits.interrupt_grace_s`);
 * one that cannot — held unanswered, or fed a byte at a time forever — is abandoned when the grace is spent, with
 * nothing of it committed, and the process exits all the same.
 *
 * The run is held mid-run deterministically: a recording proxy in front of the emulator keeps the request for one
 * SERP page unanswered until the signal is sent (or a hostile service drips a download).
 */
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  HOSTILE_SNAPSHOT,
  dripFeed,
  recordLines,
  records,
  startHostileService,
  type HostileService,
} from '../../bench/lib/hostile-service.js';
import {
  emulatorBehindProxy,
  holdPage,
  lineSeen,
  pageOf,
  serpCrawl,
  sluice,
  sluiceInProcess,
  workspace,
  type HeldPage,
  type SluiceRun,
} from './harness.js';

const served = emulatorBehindProxy({ seed: 31 });

// A short grace: units in flight may commit for 2.4 s after the signal (the last fifth is the run's to wind down).
const PIPELINE =
  serpCrawl('interrupted', ['{ type: jsonl, path: out/interrupted }'], { normalize: false }) +
  'limits: { interrupt_grace_s: 3 }\n';
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
  it('SIGINT: the unit in flight commits within the grace, exits 130, and the next run resumes without redoing it', async () => {
    const ws = workspace();
    const file = ws.write('interrupted.yaml', PIPELINE);
    served.proxy.seen.length = 0;

    const { run, gate } = await heldRun(file);
    run.child.kill('SIGINT');
    // Said at once; then the held page is answered, within the grace.
    await lineSeen(run, /SIGINT: stopping: no new units; units in flight may commit for 2\.4 s/);
    gate.release();
    const r1 = await run;
    expect(r1.signal, r1.stderr).toBeNull();
    expect(r1.code, r1.stderr).toBe(130);
    expect(r1.stderr).not.toMatch(/abandoning/);
    const outcome = r1.stderr.trimEnd().split('\n').at(-1)!;
    const [, committed] = INTERRUPTED.exec(outcome) ?? [];
    expect(outcome, r1.stderr).toMatch(INTERRUPTED);
    // Page 1 was committed before page 2 was asked for (concurrency 1), and page 2 in the grace.
    expect(Number(committed)).toBeGreaterThanOrEqual(2);

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
    // The held page never came: abandoned when the grace was spent.
    expect(r.stderr).toMatch(
      /SIGTERM: units still in flight after 2\.4 s: abandoning them; nothing of them is committed/,
    );
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

describe('an interrupted run stuck in a drip-fed download', () => {
  let hostile: HostileService;
  beforeAll(async () => {
    hostile = await startHostileService({ download: () => dripFeed(recordLines(3), 50) });
  });
  afterAll(() => hostile?.close());

  it('SIGTERM: the download is abandoned when the grace is spent, exits 143, nothing of it committed; the next run loads it', async () => {
    const ws = workspace();
    const file = ws.write(
      'drip.yaml',
      [
        'version: 1',
        'name: drip',
        'service:',
        '  base_url: ${SLUICE_BASE_URL:?}',
        '  api_key: ${SLUICE_API_KEY:?}',
        `source: { type: snapshot, snapshot_id: ${HOSTILE_SNAPSHOT}, download: { format: jsonl, compress: false, batch_size: 1000 } }`,
        'limits: { interrupt_grace_s: 2 }',
        'sink: { type: jsonl, path: out }',
        '',
      ].join('\n'),
    );
    const run = sluice(['run', file, '--no-progress'], { service: hostile });
    await Promise.race([hostile.asked(/\/download/), run]);
    run.child.kill('SIGTERM');
    const r = await run;
    expect(r.signal, r.stderr).toBeNull();
    expect(r.code, r.stderr).toBe(143);
    expect(r.stderr).toMatch(/SIGTERM: units still in flight after 1\.6 s: abandoning them/);
    expect(r.stderr.trimEnd().split('\n').at(-1)).toBe('interrupted: 0/1 units committed; run again to resume');
    expect(dataFiles(path.join(ws.pipelines, 'out'))).toEqual([]);

    hostile.options.download = () => records(3);
    const again = await sluiceInProcess(['run', file, '--no-progress'], { service: hostile });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toMatch(/^resuming drip/m);
    expect(again.stdout).toMatch(/^ {2}records {6}3$/m);
  });
});

/** Data files under an output directory (its manifest and staging are not data). */
function dataFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => /\.jsonl(\.gz)?$/.test(f));
}
