/**
 * Stops a test's throwaway PostgreSQL cluster (test/support/postgres-server.ts) once the test process is gone.
 * A test process killed hard (a vitest timeout, kill -9, a crashed worker) never runs its `afterAll`, and its
 * cluster would otherwise run forever. Plain JavaScript, run by `node` without tsx: it is spawned for every cluster
 * and must start fast and stay small.
 *
 * Usage: node postgres-watchdog.js <test pid> <temp dir> <pg_ctl> <data dir> [<user to run pg_ctl as>]
 *
 * Exits without touching anything when the temp dir disappears (the test's own `stop()` removed it).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import process from 'node:process';
import { clearInterval, setInterval } from 'node:timers';

const [testPidArg, dir, pgCtl, data, runAs] = process.argv.slice(2);
const testPid = Number(testPidArg);
if (!Number.isInteger(testPid) || !dir || !pgCtl || !data) {
  process.stderr.write('usage: node postgres-watchdog.js <test pid> <temp dir> <pg_ctl> <data dir> [<user>]\n');
  process.exit(2);
}

function testProcessAlive() {
  try {
    process.kill(testPid, 0);
    return true;
  } catch (err) {
    // EPERM: a process with that pid exists, only not ours to signal.
    return err.code === 'EPERM';
  }
}

function stopCluster() {
  const args = ['-D', data, '-m', 'immediate', '-w', '-t', '30', 'stop'];
  // PostgreSQL refuses to run as root, so the server runs as `runAs`, and only that user may signal it.
  const [file, argv] = runAs ? ['runuser', ['-u', runAs, '--', pgCtl, ...args]] : [pgCtl, args];
  // Fails harmlessly when the server never started (the test died during initdb): the directory goes either way.
  spawnSync(file, argv, { stdio: 'ignore' });
  rmSync(dir, { recursive: true, force: true });
}

const timer = setInterval(() => {
  if (!existsSync(dir)) {
    clearInterval(timer);
    return;
  }
  if (testProcessAlive()) return;
  clearInterval(timer);
  stopCluster();
}, 500);
