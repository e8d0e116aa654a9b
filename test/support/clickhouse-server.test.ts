/**
 * The throwaway ClickHouse server's watchdog (test/support/clickhouse-watchdog.js): a test process killed with
 * SIGKILL, which never reaches its `afterAll`, still has its server stopped and its directory deleted; a normal
 * `stop()` leaves no watchdog and no server behind; a restart keeps the data and the ports.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { startClickHouse } from './clickhouse-server.js';
import { systemBinary } from './system-packages.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
/** How long the watchdog may take to notice (it polls every 500 ms) and to stop the server. */
const CLEANUP_DEADLINE_MS = 20_000;
const available = systemBinary('clickhouse') !== undefined;

/** Whether `pid` is a live process: a zombie (exited, not yet reaped by its parent) counts as gone. */
function alive(pid: number): boolean {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return false;
  }
  return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
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
  serverPid: number;
  watchdogPid: number;
}

describe.skipIf(!available || !existsSync('/proc/self/stat'))('clickhouse-server', () => {
  it('the watchdog stops the server and deletes its directory once the test process is killed with SIGKILL', async () => {
    // A stand-in for a test process: starts a server, says which, then waits to be killed.
    const script = [
      `const { startClickHouse } = await import(${JSON.stringify(pathToFileURL(path.join(import.meta.dirname, 'clickhouse-server.ts')).href)});`,
      `const s = await startClickHouse();`,
      `process.stdout.write(JSON.stringify({ dir: s.dir, serverPid: s.pid(), watchdogPid: s.watchdogPid }) + '\\n');`,
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
      child.once('exit', (code) => reject(new Error(`the child exited (${code}) before starting a server: ${stderr}`)));
    });
    try {
      expect(alive(started.serverPid)).toBe(true);
      expect(alive(started.watchdogPid)).toBe(true);

      child.kill('SIGKILL');
      expect(await exited).toBe('SIGKILL');

      await waitFor('the server to stop and its directory to go', () => {
        return !alive(started.serverPid) && !existsSync(started.dir);
      });
      await waitFor('the watchdog to exit', () => !alive(started.watchdogPid));
    } finally {
      // Whatever the watchdog failed to do, so that a failure here leaks nothing into the rest of the run.
      child.kill('SIGKILL');
      for (const pid of [started.watchdogPid, started.serverPid]) if (alive(pid)) process.kill(pid, 'SIGKILL');
      rmSync(started.dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('restarts on the same ports with its data; stop() stops the server, deletes the directory and ends the watchdog', async () => {
    const server = await startClickHouse();
    await server.query('CREATE TABLE default.kept (a Int64) ENGINE = MergeTree ORDER BY tuple()');
    await server.query('INSERT INTO default.kept VALUES (1), (2)');
    const before = server.pid();
    await server.restart();
    expect(server.pid()).not.toBe(before);
    expect(alive(before)).toBe(false);
    expect(await server.rows('SELECT count() AS n FROM default.kept')).toEqual([{ n: 2 }]);
    const pid = server.pid();
    server.stop();
    expect(existsSync(server.dir)).toBe(false);
    await waitFor('the server to exit', () => !alive(pid));
    await waitFor('the watchdog to exit', () => !alive(server.watchdogPid));
  }, 60_000);
});
