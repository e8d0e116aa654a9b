/**
 * The throwaway cluster's watchdog (test/support/postgres-watchdog.js): a test process killed with SIGKILL, which
 * never reaches its `afterAll`, still has its cluster stopped and its directory deleted; a normal `stop()` leaves no
 * watchdog behind.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { hasPostgres, startPostgres } from './postgres-server.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
/** How long the watchdog may take to notice (it polls every 500 ms) and to stop the server. */
const CLEANUP_DEADLINE_MS = 20_000;

/** Whether `pid` is a live process: a zombie (exited, not yet reaped by its parent) counts as gone. */
function alive(pid: number): boolean {
  if (!existsSync('/proc/self/stat')) {
    // No procfs (macOS): the signal check, which cannot tell a zombie from a live process.
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  }
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return false;
  }
  // The state follows the parenthesized command name, which may itself hold spaces or parentheses.
  return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
}

function postmasterPid(dataDir: string): number {
  return Number(readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
}

async function waitFor(what: string, done: () => boolean): Promise<void> {
  const deadline = Date.now() + CLEANUP_DEADLINE_MS;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`still waiting after ${CLEANUP_DEADLINE_MS} ms for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

interface Started {
  dir: string;
  postmasterPid: number;
  watchdogPid: number;
}

describe.skipIf(!hasPostgres())('postgres-server watchdog', () => {
  it('stops the cluster and deletes its directory once the test process is killed with SIGKILL', async () => {
    // A stand-in for a test process: starts a cluster, says which, then waits to be killed.
    const script = [
      `import { readFileSync } from 'node:fs';`,
      `import path from 'node:path';`,
      `const { startPostgres } = await import(${JSON.stringify(pathToFileURL(path.join(import.meta.dirname, 'postgres-server.ts')).href)});`,
      `const s = await startPostgres();`,
      `const postmasterPid = Number(readFileSync(path.join(s.dataDir, 'postmaster.pid'), 'utf8').split('\\n')[0]);`,
      `process.stdout.write(JSON.stringify({ dir: s.socketDir, postmasterPid, watchdogPid: s.watchdogPid }) + '\\n');`,
      `setInterval(() => {}, 60_000);`,
    ].join('\n');
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '--eval', script], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const exited = new Promise<NodeJS.Signals | null>((resolve) =>
      child.once('exit', (_code, signal) => resolve(signal)),
    );
    const started = await new Promise<Started>((resolve, reject) => {
      let stdout = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => {
        stdout += d;
        if (stdout.includes('\n')) resolve(JSON.parse(stdout.slice(0, stdout.indexOf('\n'))) as Started);
      });
      child.once('error', reject);
      child.once('exit', (code) =>
        reject(new Error(`the child exited (${code}) before starting a cluster: ${stderr}`)),
      );
    });
    try {
      expect(alive(started.postmasterPid)).toBe(true);
      expect(alive(started.watchdogPid)).toBe(true);

      child.kill('SIGKILL');
      expect(await exited).toBe('SIGKILL');

      await waitFor('the server to stop and its directory to go', () => {
        return !alive(started.postmasterPid) && !existsSync(started.dir);
      });
      await waitFor('the watchdog to exit', () => !alive(started.watchdogPid));
    } finally {
      // Whatever the watchdog failed to do, so that a failure here leaks nothing into the rest of the run.
      child.kill('SIGKILL');
      for (const pid of [started.watchdogPid, started.postmasterPid])
        if (alive(pid)) process.kill(pid, pid === started.postmasterPid ? 'SIGQUIT' : 'SIGKILL');
      rmSync(started.dir, { recursive: true, force: true });
    }
  });

  it('a normal stop() stops the server, deletes the directory and ends the watchdog', async () => {
    const server = await startPostgres();
    const postmaster = postmasterPid(server.dataDir);
    expect(alive(server.watchdogPid)).toBe(true);

    server.stop();

    expect(existsSync(server.socketDir)).toBe(false);
    // pg_ctl returns once the server removed its pid file, a moment before its process exits.
    await waitFor('the server to exit', () => !alive(postmaster));
    await waitFor('the watchdog to exit', () => !alive(server.watchdogPid));
  });
});
