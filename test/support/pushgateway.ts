/**
 * A real Prometheus Pushgateway for the tests (Debian's `prometheus-pushgateway`), on a free port of 127.0.0.1,
 * without persistence (with basic auth when asked), stopped by `stop()`. Started once it logs that it listens. The binary is the suite's to
 * install (system-packages.ts); a test file that finds none skips its gateway tests (`systemBinary`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { installCommand, systemBinary } from './system-packages.js';

export interface Pushgateway {
  url: string;
  /** The text of `GET /metrics`: everything pushed, in Prometheus's exposition format. */
  scrape(): Promise<string>;
  /** PUTs `text` as the metrics of `job` (the Pushgateway parses it with Prometheus's parser); the HTTP status. */
  put(job: string, text: string): Promise<{ status: number; body: string }>;
  stop(): void;
}

function findBinary(): string {
  const bin = systemBinary('pushgateway');
  if (bin !== undefined) return bin;
  throw new Error(
    `the Prometheus Pushgateway binary was not found ($SLUICE_PUSHGATEWAY, /usr/bin/prometheus-pushgateway or PATH): ${installCommand(['pushgateway'])}`,
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

/**
 * `basicAuth`: the gateway asks for HTTP basic auth (its web config file, written beside nothing else in a temporary
 * directory); `bcrypt` is the password's bcrypt hash, as Prometheus's exporter toolkit takes it.
 */
export async function startPushgateway(
  opts: { basicAuth?: { user: string; password: string; bcrypt: string } } = {},
): Promise<Pushgateway> {
  const bin = findBinary();
  const port = await freePort();
  const args = [`--web.listen-address=127.0.0.1:${port}`];
  let configDir: string | undefined;
  if (opts.basicAuth) {
    configDir = mkdtempSync(path.join(tmpdir(), 'sluice-pushgateway-'));
    const file = path.join(configDir, 'web.yml');
    writeFileSync(file, `basic_auth_users:\n  ${opts.basicAuth.user}: '${opts.basicAuth.bcrypt}'\n`);
    args.push(`--web.config.file=${file}`);
  }
  const child: ChildProcess = spawn(bin, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  await new Promise<void>((resolve, reject) => {
    let log = '';
    const onData = (chunk: Buffer): void => {
      log += chunk.toString();
      if (log.includes('msg="Listening on"')) {
        child.stderr!.off('data', onData);
        child.stderr!.resume();
        resolve();
      }
    };
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`the Pushgateway exited (${code}) before listening:\n${log}`)));
    child.once('error', reject);
  });
  const url = `http://127.0.0.1:${port}`;
  const auth: Record<string, string> = opts.basicAuth
    ? {
        authorization: `Basic ${Buffer.from(`${opts.basicAuth.user}:${opts.basicAuth.password}`).toString('base64')}`,
      }
    : {};
  return {
    url,
    scrape: async () => (await fetch(`${url}/metrics`, { headers: auth })).text(),
    put: async (job, text) => {
      const res = await fetch(`${url}/metrics/job/${job}`, { method: 'PUT', body: text, headers: auth });
      return { status: res.status, body: await res.text() };
    },
    stop: () => {
      child.kill('SIGTERM');
      if (configDir) rmSync(configDir, { recursive: true, force: true });
    },
  };
}
