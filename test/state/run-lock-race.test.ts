/**
 * Runs racing for one dead holder's lock: exactly one takes it over. Racers are separate processes
 * (test/support/lock-racer.js, over the compiled module) released together at one instant: in-process promises
 * would interleave only at the awaits the code under test chose, where processes interleave anywhere between two
 * system calls, as runs do.
 *
 * `npm test` races 10 times (the takeover before it was made atomic gave several holders in 236 trials of 300);
 * SLUICE_LOCK_RACE=full (CI) 300 times.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { processStart, selfIdentity } from '../../src/state/process-identity.js';
import { readLockRecord } from '../../src/state/run-lock.js';

const TRIALS = process.env.SLUICE_LOCK_RACE === 'full' ? 300 : 10;
const RACERS = 4;
const repo = path.resolve(import.meta.dirname, '../..');
const dir = mkdtempSync(path.join(tmpdir(), 'sluice-lock-race-'));

interface Racer {
  child: ChildProcess;
  next(): Promise<Record<string, unknown>>;
}

function racer(): Promise<Racer> {
  const child = spawn(process.execPath, [path.join(repo, 'test/support/lock-racer.js')], {
    cwd: repo,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const inbox: Record<string, unknown>[] = [];
  const waiting: { resolve: (m: Record<string, unknown>) => void; reject: (e: Error) => void }[] = [];
  child.on('message', (m: Record<string, unknown>) => {
    const w = waiting.shift();
    if (w) w.resolve(m);
    else inbox.push(m);
  });
  child.once('exit', (code) => {
    for (const w of waiting.splice(0)) w.reject(new Error(`racer exited (${code})`));
  });
  const r: Racer = {
    child,
    next: () =>
      new Promise((resolve, reject) => {
        const m = inbox.shift();
        if (m) return resolve(m);
        waiting.push({ resolve, reject });
      }),
  };
  return r.next().then(() => r);
}

/** A holder that died: a process that ran, wrote its lock as a run would, and was killed with -9. */
async function deadHolder(): Promise<Record<string, unknown>> {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  const exited = new Promise((r) => child.once('exit', r));
  const start = processStart(child.pid!);
  child.kill('SIGKILL');
  await exited;
  return {
    ...selfIdentity(),
    pid: child.pid!,
    ...(start !== undefined && { start }),
    since: new Date().toISOString(),
    command: 'sluice run killed.yaml',
    token: 'dead0000dead0000',
  };
}

let racers: Racer[] = [];
beforeAll(async () => {
  racers = await Promise.all(Array.from({ length: RACERS }, racer));
});
afterAll(() => {
  for (const r of racers) r.child.kill();
  rmSync(dir, { recursive: true, force: true });
});

describe('the run lock under a race', () => {
  it(`of ${RACERS} processes finding one dead holder, exactly one takes it over (${TRIALS} trials)`, async () => {
    const dead = JSON.stringify(await deadHolder());
    const holders: number[] = [];
    for (let trial = 0; trial < TRIALS; trial++) {
      const file = path.join(dir, `t${trial}.lock`);
      writeFileSync(file, dead);
      const at = Date.now() + 30;
      for (const r of racers) r.child.send({ race: file, at });
      const answers = await Promise.all(racers.map((r) => r.next()));
      expect(answers.filter((a) => a.error !== undefined)).toEqual([]);
      const winners = racers.filter((_, i) => answers[i]!.held === true);
      holders.push(winners.length);
      if (winners.length === 1) expect((await readLockRecord(file))?.command).toBe(`racer ${winners[0]!.child.pid}`);
      await Promise.all(
        winners.map(async (r) => {
          r.child.send({ release: true });
          await r.next();
        }),
      );
      // No claim or temporary file is left behind by the winner or the losers.
      expect(readdirSync(dir).filter((f) => f.startsWith(`t${trial}.`))).toEqual([]);
    }
    const count = (n: number): number => holders.filter((h) => h === n).length;
    expect({ none: count(0), one: count(1), several: TRIALS - count(0) - count(1) }).toEqual({
      none: 0,
      one: TRIALS,
      several: 0,
    });
  });
});
