/**
 * A throwaway ClickHouse server for the tests: Debian's `clickhouse-server` (18.16 in bookworm) started from a config
 * written into a temporary directory — its data, logs and users there too, no system service and nothing of /etc —
 * on two free ports of 127.0.0.1 (HTTP, which the sink speaks, and the native protocol, which `clickhouse-client`
 * speaks), stopped and deleted by `stop()`.
 *
 * Two users: `default` without a password (the tests' own reads) and `sluice` with a password (the sink's, so a test
 * can check that the password never shows), and any a test asks for (`users`). The server runs as the user the tests
 * run as: 18.16 does not refuse root.
 *
 * A test process killed hard never runs its `afterAll`: a detached watchdog (clickhouse-watchdog.js), one per server,
 * polls the test process's pid and kills the server and deletes its directory once the test process is gone. The
 * binary is the suite's to install (system-packages.ts); without it this throws, naming the command that installs it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, openSync, closeSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { installCommand, systemBinary } from './system-packages.js';

export const CH_USER = 'sluice';
/** The sink user's password; tests check it never appears in any output. */
export const CH_PASSWORD = 'ch-canary-51f0a9e2d7';

export interface ClickHouseServer {
  /** HTTP port (the sink's). */
  httpPort: number;
  /** Native protocol port (`clickhouse-client --port`). */
  tcpPort: number;
  /** The server's temporary directory (config, data, logs), deleted by `stop()`. */
  dir: string;
  /** The process that stops the server if this test process dies without calling `stop()`. */
  watchdogPid: number;
  /** The server's current process id (a restart changes it). */
  pid(): number;
  /** `http://sluice:<password>@127.0.0.1:<port>`: what a pipeline's `url` holds. */
  url(): string;
  /** Runs `sql` as `default` over HTTP; the answer's text (for a SELECT, in `format`). Throws on an error answer. */
  query(sql: string): Promise<string>;
  /** Rows of a SELECT as objects (JSONEachRow, 64-bit integers as numbers). */
  rows<T = Record<string, unknown>>(sql: string): Promise<T[]>;
  /** A new empty database. */
  createDatabase(name: string): Promise<void>;
  /** Kills the server (SIGKILL: connections are cut mid-answer) and starts it again on the same ports. */
  restart(): Promise<void>;
  /** The two halves of `restart()`, for a test that keeps the server down while something happens. */
  stopServer(): Promise<void>;
  startServer(): Promise<void>;
  stop(): void;
}

function findBinary(): string {
  const bin = systemBinary('clickhouse');
  if (bin !== undefined) return bin;
  throw new Error(
    `the ClickHouse server binary was not found ($SLUICE_CLICKHOUSE_SERVER, /usr/sbin/clickhouse-server or PATH): ${installCommand(['clickhouse'])}`,
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

function configXml(dir: string, httpPort: number, tcpPort: number): string {
  return `<?xml version="1.0"?>
<yandex>
  <logger>
    <level>warning</level>
    <log>${dir}/server.log</log>
    <errorlog>${dir}/server.err.log</errorlog>
    <console>0</console>
  </logger>
  <listen_host>127.0.0.1</listen_host>
  <http_port>${httpPort}</http_port>
  <tcp_port>${tcpPort}</tcp_port>
  <path>${dir}/data/</path>
  <tmp_path>${dir}/tmp/</tmp_path>
  <user_files_path>${dir}/user_files/</user_files_path>
  <format_schema_path>${dir}/format_schemas/</format_schema_path>
  <users_config>users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <timezone>UTC</timezone>
  <mark_cache_size>268435456</mark_cache_size>
  <uncompressed_cache_size>0</uncompressed_cache_size>
  <max_concurrent_queries>100</max_concurrent_queries>
  <keep_alive_timeout>10</keep_alive_timeout>
</yandex>
`;
}

/** Text as XML character data. */
function xmlText(s: string): string {
  return s.replace(/[&<>]/g, (c) => (c === '&' ? '&amp;' : c === '<' ? '&lt;' : '&gt;'));
}

function usersXml(extra: Readonly<Record<string, string>>): string {
  const user = (name: string, password: string): string =>
    `<${name}><password>${xmlText(password)}</password><networks><ip>127.0.0.1</ip></networks><profile>default</profile><quota>default</quota></${name}>`;
  const users = { default: '', [CH_USER]: CH_PASSWORD, ...extra };
  return `<?xml version="1.0"?>
<yandex>
  <profiles><default><max_memory_usage>4000000000</max_memory_usage></default></profiles>
  <users>${Object.entries(users)
    .map(([name, password]) => user(name, password))
    .join('')}</users>
  <quotas><default><interval><duration>3600</duration><queries>0</queries><errors>0</errors><result_rows>0</result_rows><read_rows>0</read_rows><execution_time>0</execution_time></interval></default></quotas>
</yandex>
`;
}

async function waitForPing(httpPort: number, child: ChildProcess, log: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  let exited: number | null | undefined;
  child.once('exit', (code) => (exited = code));
  for (;;) {
    if (exited !== undefined) throw new Error(`clickhouse-server exited (${exited}) before answering; see ${log}`);
    try {
      const res = await fetch(`http://127.0.0.1:${httpPort}/ping`);
      if (res.ok && (await res.text()).startsWith('Ok')) return;
    } catch {
      // Not listening yet.
    }
    if (Date.now() > deadline) throw new Error(`clickhouse-server did not answer within 60 s; see ${log}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

export interface ClickHouseOptions {
  /** More users (name → password), beside `default` and `sluice` (18.16 has no CREATE USER: users.xml says them). */
  users?: Readonly<Record<string, string>>;
}

export async function startClickHouse(opts: ClickHouseOptions = {}): Promise<ClickHouseServer> {
  const bin = findBinary();
  const dir = mkdtempSync(path.join(tmpdir(), 'sluice-ch-'));
  for (const sub of ['data', 'tmp', 'user_files', 'format_schemas']) mkdirSync(path.join(dir, sub));
  const pidFile = path.join(dir, 'server.pid');
  // Started before the server, so that a test killed while the server is starting leaves nothing behind either.
  const watchdog = spawn(
    process.execPath,
    [path.join(import.meta.dirname, 'clickhouse-watchdog.js'), String(process.pid), dir, pidFile],
    // Its own process group, so that a signal to the test's group does not take it along; unreferenced, so that
    // it never keeps the test process alive.
    { detached: true, stdio: 'ignore' },
  );
  watchdog.unref();
  let httpPort = 0;
  let tcpPort = 0;
  let child: ChildProcess | undefined;
  const launch = async (): Promise<void> => {
    const out = openSync(path.join(dir, 'stdout.log'), 'a');
    try {
      child = spawn(bin, [`--config-file=${path.join(dir, 'config.xml')}`], { cwd: dir, stdio: ['ignore', out, out] });
    } finally {
      closeSync(out);
    }
    child.unref();
    writeFileSync(pidFile, String(child.pid));
    await waitForPing(httpPort, child, path.join(dir, 'server.err.log'));
  };
  for (let attempt = 1; ; attempt++) {
    [httpPort, tcpPort] = [await freePort(), await freePort()];
    writeFileSync(path.join(dir, 'config.xml'), configXml(dir, httpPort, tcpPort));
    writeFileSync(path.join(dir, 'users.xml'), usersXml(opts.users ?? {}));
    try {
      await launch();
      break;
    } catch (err) {
      // Another process took a port between the probe and the start.
      child?.kill('SIGKILL');
      if (attempt >= 3) throw err;
    }
  }
  const kill = async (): Promise<void> => {
    const c = child;
    child = undefined;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const gone = new Promise((resolve) => c.once('exit', resolve));
    // Held while waiting: an unreferenced child's exit alone would not keep this process running.
    c.ref();
    c.kill('SIGKILL');
    await gone;
  };
  let stopped = false;
  const query = async (sql: string, settings = ''): Promise<string> => {
    const res = await fetch(`http://127.0.0.1:${httpPort}/?user=default${settings}`, { method: 'POST', body: sql });
    const text = await res.text();
    if (!res.ok) throw new Error(`ClickHouse answered ${res.status} to ${sql.slice(0, 200)}: ${text}`);
    return text;
  };
  const server: ClickHouseServer = {
    httpPort,
    tcpPort,
    dir,
    watchdogPid: watchdog.pid!,
    pid: () => child?.pid ?? -1,
    url: () => `http://${CH_USER}:${CH_PASSWORD}@127.0.0.1:${httpPort}`,
    query: (sql) => query(sql),
    async rows<T>(sql: string): Promise<T[]> {
      const text = await query(`${sql} FORMAT JSONEachRow`, '&output_format_json_quote_64bit_integers=0');
      return text
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as T);
    },
    async createDatabase(name) {
      await query(`CREATE DATABASE IF NOT EXISTS \`${name}\``);
    },
    async restart() {
      await server.stopServer();
      await server.startServer();
    },
    stopServer: kill,
    async startServer() {
      if (child) return;
      await launch();
    },
    stop() {
      if (stopped) return;
      stopped = true;
      // Otherwise it would outlive the server, waiting for this process to exit.
      watchdog.kill();
      child?.kill('SIGKILL');
      child = undefined;
      rmSync(dir, { recursive: true, force: true });
    },
  };
  if (!existsSync(dir)) throw new Error(`the server's directory ${dir} vanished`);
  return server;
}
