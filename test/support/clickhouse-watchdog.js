/**
 * Stops a test's throwaway ClickHouse server (test/support/clickhouse-server.ts) once the test process is gone. A
 * test process killed hard (a vitest timeout, kill -9, a crashed worker) never runs its `afterAll`, and its server
 * would otherwise run forever. Plain JavaScript, run by `node` without tsx: it is spawned for every server and must
 * start fast and stay small.
 *
 * Usage: node clickhouse-watchdog.js <test pid> <temp dir> <pid file>
 *
 * The pid file holds the server's current process id (a restart writes a new one). Exits without touching anything
 * when the temp dir disappears (the test's own `stop()` removed it).
 */
import { existsSync, readFileSync, rmSync } from 'node:fs';
import process from 'node:process';
import { clearInterval, setInterval } from 'node:timers';

const [testPidArg, dir, pidFile] = process.argv.slice(2);
const testPid = Number(testPidArg);
if (!Number.isInteger(testPid) || !dir || !pidFile) {
  process.stderr.write('usage: node clickhouse-watchdog.js <test pid> <temp dir> <pid file>\n');
  process.exit(2);
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: a process with that pid exists, only not ours to signal.
    return err.code === 'EPERM';
  }
}

function stopServer() {
  try {
    const pid = Number(readFileSync(pidFile, 'utf8').trim());
    if (Number.isInteger(pid) && pid > 0) process.kill(pid, 'SIGKILL');
  } catch {
    // No pid file yet (the test died before the server started), or the server is gone already.
  }
  rmSync(dir, { recursive: true, force: true });
}

const timer = setInterval(() => {
  if (!existsSync(dir)) {
    clearInterval(timer);
    return;
  }
  if (alive(testPid)) return;
  clearInterval(timer);
  stopServer();
}, 500);
