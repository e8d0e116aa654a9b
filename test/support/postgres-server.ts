/**
 * A throwaway PostgreSQL cluster for the tests: `initdb` into a temporary directory, `pg_ctl start` on a free port
 * of 127.0.0.1 (and a unix socket in the same directory), stopped and deleted by `stop()`. Local connections are
 * trusted; TCP connections need the superuser's password (scram-sha-256), so a test can pass a password and check
 * that it never shows.
 *
 * The server binaries are a system package's (support/system-packages.ts, `postgres`: Debian's postgresql-15, found in
 * $SLUICE_PG_BINDIR, /usr/lib/postgresql/15/bin or on PATH), installed by the suite's global setup where it can.
 * PostgreSQL refuses to run as root: when the tests run as root, initdb and the server run as the `postgres` user
 * (`runuser -u postgres --`), which owns the directory; the package creates it, else the global setup does. A file
 * that starts a server skips its tests when `hasPostgres()` says no (the run's first lines name them and the command
 * that brings them in); called anyway, this throws, naming that command.
 *
 * A test process killed hard never runs its `afterAll`: a detached watchdog (postgres-watchdog.js), one per cluster,
 * polls the test process's pid and stops and deletes the cluster once it is gone. `stop()` ends the watchdog.
 */
import { execFileSync, spawn } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { hasSystemPackage, installCommand, runAsUser, systemBinary } from './system-packages.js';

export const PG_USER = 'sluice';
/** The superuser's password for TCP connections; tests check it never appears in any output. */
export const PG_PASSWORD = 'pg-canary-9c2e71b4f0';

export interface PostgresServer {
  port: number;
  /** Directory of the unix socket (`host` for libpq); the cluster's temporary directory, deleted by `stop()`. */
  socketDir: string;
  /** The cluster's data directory (inside `socketDir`); its `postmaster.pid` names the server's process. */
  dataDir: string;
  /** The process that stops the cluster if this test process dies without calling `stop()`. */
  watchdogPid: number;
  /** `postgres://sluice:<password>@127.0.0.1:<port>/<database>`. */
  url(database: string): string;
  /** The unix socket's URL (trusted: no password, and no password hashing on each connect). */
  socketUrl(database: string): string;
  /** A new empty database. */
  createDatabase(name: string): Promise<void>;
  /** Runs `sql` in `database` over the socket (no password needed); returns the rows. */
  query<T extends pg.QueryResultRow = Record<string, any>>(
    database: string,
    sql: string,
    params?: unknown[],
  ): Promise<T[]>;
  /** Stops the server with `-m fast` (connections are cut) and starts it again on the same port. */
  restart(): void;
  /** The two halves of `restart()`, for a test that keeps the server down while something happens. */
  stopServer(): void;
  startServer(): void;
  stop(): void;
}

/** The server binaries and, as root, the user to run them as are here; otherwise the file's Postgres tests skip. */
export function hasPostgres(): boolean {
  return hasSystemPackage('postgres');
}

function findBinDir(): string {
  const initdb = systemBinary('postgres');
  const dir = initdb && path.dirname(initdb);
  if (dir && hasPostgres() && ['pg_ctl', 'postgres'].every((b) => existsSync(path.join(dir, b)))) return dir;
  throw new Error(
    `PostgreSQL 15 server binaries (initdb, pg_ctl, postgres${runAsUser('postgres') ? '; as root, the postgres user' : ''}) ` +
      `not found in $SLUICE_PG_BINDIR, /usr/lib/postgresql/15/bin or PATH: ${installCommand(['postgres'])} ` +
      '(Debian/Ubuntu), `brew install postgresql@15` (macOS), or set SLUICE_PG_BINDIR to the directory holding initdb',
  );
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

function chownTree(p: string, uid: number, gid: number): void {
  chownSync(p, uid, gid);
  if (statSync(p).isDirectory()) for (const name of readdirSync(p)) chownTree(path.join(p, name), uid, gid);
}

export async function startPostgres(): Promise<PostgresServer> {
  const bin = findBinDir();
  const runAs = runAsUser('postgres');
  const run = (cmd: string, args: string[]): string => {
    const [file, argv] = runAs
      ? ['runuser', ['-u', runAs, '--', path.join(bin, cmd), ...args]]
      : [path.join(bin, cmd), args];
    try {
      return execFileSync(file, argv, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    } catch (err) {
      const e = err as { stderr?: string; stdout?: string; message: string };
      throw new Error(`${cmd} ${args.join(' ')} failed: ${e.stderr || e.stdout || e.message}`);
    }
  };
  const dir = mkdtempSync(path.join(tmpdir(), 'sluice-pg-'));
  const data = path.join(dir, 'data');
  const pwfile = path.join(dir, 'pw');
  writeFileSync(pwfile, `${PG_PASSWORD}\n`);
  if (runAs) {
    const uid = Number(execFileSync('id', ['-u', runAs], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', runAs], { encoding: 'utf8' }).trim());
    chownTree(dir, uid, gid);
  }
  // Started before initdb, so that a test killed while the cluster is still starting leaves nothing behind either.
  const watchdog = spawn(
    process.execPath,
    [
      path.join(import.meta.dirname, 'postgres-watchdog.js'),
      String(process.pid),
      dir,
      path.join(bin, 'pg_ctl'),
      data,
      ...(runAs ? [runAs] : []),
    ],
    // Its own process group, so that a signal to the test's group (Ctrl-C, a runner's kill) does not take it along;
    // unreferenced, so that it never keeps the test process alive.
    { detached: true, stdio: 'ignore' },
  );
  watchdog.unref();
  run('initdb', [
    '-D',
    data,
    '-U',
    PG_USER,
    `--pwfile=${pwfile}`,
    '--auth-local=trust',
    '--auth-host=scram-sha-256',
    '-E',
    'UTF8',
    '--no-locale',
    '--no-sync',
  ]);
  let port = 0;
  const start = (): void => {
    run('pg_ctl', [
      '-D',
      data,
      '-l',
      path.join(dir, 'server.log'),
      '-w',
      '-t',
      '60',
      '-o',
      // No durability needed for a throwaway cluster; the tests kill sluice, not the server.
      `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off -c synchronous_commit=off -c max_connections=60`,
      'start',
    ]);
  };
  for (let attempt = 1; ; attempt++) {
    port = await freePort();
    try {
      start();
      break;
    } catch (err) {
      // Another process took the port between the probe and the start.
      if (attempt >= 3) throw err;
    }
  }
  let stopped = false;
  const client = (database: string): pg.Client =>
    new pg.Client({ host: dir, port, user: PG_USER, database, password: PG_PASSWORD });
  const server: PostgresServer = {
    port,
    socketDir: dir,
    dataDir: data,
    watchdogPid: watchdog.pid!,
    url: (database) => `postgres://${PG_USER}:${PG_PASSWORD}@127.0.0.1:${port}/${database}`,
    socketUrl: (database) => `postgres://${PG_USER}@/${database}?host=${encodeURIComponent(dir)}&port=${port}`,
    async createDatabase(name) {
      await server.query('postgres', `CREATE DATABASE "${name}"`);
    },
    async query(database, sql, params) {
      const c = client(database);
      await c.connect();
      try {
        return (await c.query(sql, params)).rows;
      } finally {
        await c.end();
      }
    },
    restart() {
      server.stopServer();
      server.startServer();
    },
    stopServer() {
      run('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop']);
    },
    startServer() {
      start();
    },
    stop() {
      if (stopped) return;
      stopped = true;
      // Otherwise it would outlive the cluster, waiting for this process to exit.
      watchdog.kill();
      try {
        run('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
  return server;
}
