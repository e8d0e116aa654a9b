/**
 * End-to-end helpers: the real `sluice` executable in a child process, pointed at an emulator this test process
 * started, and outputs read back with DuckDB. The child is spawned asynchronously: the emulator lives on this
 * process's event loop, so a blocking spawn would leave every request of the child unanswered. Commands that need
 * no process of their own run the CLI's entry in this process instead (sluiceInProcess): a child's start and its
 * DuckDB load cost more than many a test's own work.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import {
  createServer,
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll } from 'vitest';
import { startEmulator, type EmulatorHandle } from '../../src/emulator/server.js';
import type { EmulatorOptions } from '../../src/emulator/context.js';
import type { CliIo } from '../../src/cli/io.js';

export const ROOT = path.resolve(import.meta.dirname, '../..');
const BIN = path.join(ROOT, 'bin/sluice.js');
export const API_KEY = 'e2e-key-7f3a9c21';

export type Obj = Record<string, any>;

/** An emulator on 127.0.0.1:0 with the e2e key; small data and fast emulated time unless told otherwise. */
export function emulator(opts: Partial<EmulatorOptions> = {}): Promise<EmulatorHandle> {
  return startEmulator({ apiKey: API_KEY, size: 3000, timeScale: 50, ...opts });
}

export interface Workspace {
  dir: string;
  /** The copy of pipelines/ (outputs of the examples land in `<dir>/out`, their `../out`). */
  pipelines: string;
  out: string;
  /** Path of a pipeline file in the copy. */
  pipeline(name: string): string;
  /** Writes a pipeline (or any file) into the copy of pipelines/ and returns its path. */
  write(name: string, text: string): string;
}

const workspaces: string[] = [];
/**
 * Deletes the workspaces made so far; test/setup-per-file.ts runs it after each test file (this module is imported
 * once per worker process, which runs many files). SLUICE_E2E_KEEP=1 keeps the directories for a look at what a run
 * wrote.
 */
export function removeWorkspaces(): void {
  if (!process.env.SLUICE_E2E_KEEP) for (const d of workspaces.splice(0)) rmSync(d, { recursive: true, force: true });
}

/** A temporary copy of pipelines/, so the examples' relative outputs and state stay out of the repository. */
export function workspace(): Workspace {
  const dir = mkdtempSync(path.join(tmpdir(), 'sluice-e2e-'));
  workspaces.push(dir);
  const pipelines = path.join(dir, 'pipelines');
  // Without the state of runs made in the repository (`.sluice/`): a copied checkpoint would make a run resume.
  cpSync(path.join(ROOT, 'pipelines'), pipelines, {
    recursive: true,
    filter: (src) => !path.basename(src).startsWith('.sluice'),
  });
  return {
    dir,
    pipelines,
    out: path.join(dir, 'out'),
    pipeline: (name) => path.join(pipelines, name),
    write: (name, text) => {
      const file = path.join(pipelines, name);
      writeFileSync(file, text);
      return file;
    },
  };
}

/** An example pipeline's text with some lines replaced, for variants of the examples. */
export function variant(ws: Workspace, example: string, replace: [string | RegExp, string][]): string {
  let text = readFileSync(ws.pipeline(example), 'utf8');
  for (const [from, to] of replace) {
    const next = text.replace(from, to);
    if (next === text) throw new Error(`variant of ${example}: ${String(from)} not found`);
    text = next;
  }
  return text;
}

export interface Result {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface SluiceRun extends Promise<Result> {
  child: ChildProcess;
}

/** Runs `node bin/sluice.js …args` against `service` (its URL and key in SLUICE_BASE_URL / SLUICE_API_KEY). */
export function sluice(
  args: string[],
  opts: { service?: { url: string }; env?: Record<string, string>; cwd?: string } = {},
): SluiceRun {
  // The child must not inherit a key or address from the developer's shell.
  const { SLUICE_BASE_URL: _url, SLUICE_API_KEY: _key, ...inherited } = process.env;
  const env: Record<string, string | undefined> = {
    ...inherited,
    ...(opts.service && { SLUICE_BASE_URL: opts.service.url, SLUICE_API_KEY: API_KEY }),
    ...opts.env,
  };
  const child = spawn(process.execPath, [BIN, ...args], { cwd: opts.cwd ?? ROOT, env, stdio: 'pipe' });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (s: string) => (stdout += s));
  child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
  const done = new Promise<Result>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  }) as SluiceRun;
  done.child = child;
  return done;
}

/** A command run by `sluiceInProcess`: its result once it ends, and its stderr while it runs (see lineSeen). */
export interface InProcessRun extends Promise<Result> {
  /** Emits `data` with each stderr line (newline included) as it is written, and `close` once the command ended. */
  stderrEvents: EventEmitter;
  readonly ended: boolean;
}

/**
 * `sluice …args` as `sluice()` runs it, with the same environment and a `Result` of the same text (each line
 * redacted and ended by a newline, as the real process writes it), but in this process: the CLI's own entry
 * (runCli) instead of a child, which spares the child's start and its DuckDB load. Not for what needs a process of
 * its own: signals and kill -9 (failpoints kill the process they are armed in), a second process holding a lock,
 * secrets registered by an earlier command (src/core/redact.ts keeps them process-wide: a later command's output
 * would be redacted even if it forgot to register its key), a real terminal, or the executable's startup.
 * A DuckDB file it writes stays open in this process (the sink leaves it in DuckDB's cache): a child started later
 * could not open it. Relative paths start at this process's directory, the repository (as `sluice()`'s default `cwd`).
 */
export function sluiceInProcess(
  args: string[],
  opts: { service?: { url: string }; env?: Record<string, string> } = {},
): InProcessRun {
  if (opts.env?.SLUICE_FAILPOINTS !== undefined)
    throw new Error('sluiceInProcess: a failpoint kills the process it is armed in: use sluice() for it');
  if (process.cwd() !== ROOT) throw new Error(`sluiceInProcess: runs from ${ROOT}, not ${process.cwd()}`);
  const { SLUICE_BASE_URL: _url, SLUICE_API_KEY: _key, ...inherited } = process.env;
  const env: Record<string, string | undefined> = {
    ...inherited,
    ...(opts.service && { SLUICE_BASE_URL: opts.service.url, SLUICE_API_KEY: API_KEY }),
    ...opts.env,
  };
  const stderrEvents = new EventEmitter();
  const state = { ended: false };
  let stdout = '';
  let stderr = '';
  const done = (async (): Promise<Result> => {
    // Imported here: the files that never run in-process need not load the whole CLI.
    const [{ runCli }, { redact }] = await Promise.all([
      import('../../src/cli/cli.js'),
      import('../../src/core/redact.js'),
    ]);
    const interrupts = new AbortController();
    const io: CliIo = {
      out: (text) => void (stdout += redact(text) + '\n'),
      err: (text) => {
        const line = redact(text) + '\n';
        stderr += line;
        stderrEvents.emit('data', line);
      },
      env,
      // What the real process has with its stdout piped (processIo).
      columns: 100,
      untilStopped: () => new Promise<void>(() => undefined),
      interrupts: () => ({ signal: interrupts.signal, release: () => undefined }),
    };
    try {
      const code = await runCli(args, io);
      return { code, signal: null, stdout, stderr };
    } finally {
      state.ended = true;
      stderrEvents.emit('close');
    }
  })() as InProcessRun;
  done.stderrEvents = stderrEvents;
  Object.defineProperty(done, 'ended', { get: () => state.ended });
  return done;
}

/** `runOk` in this process (sluiceInProcess): the same result and the same failure message. */
export async function runOkInProcess(
  file: string,
  service: { url: string } | undefined,
  ...extra: string[]
): Promise<Result> {
  const r = await sluiceInProcess(['run', file, '--no-progress', ...extra], service ? { service } : {});
  if (r.code !== 0)
    throw new Error(`sluice run ${path.basename(file)} (in-process) exited ${r.code}:\n${r.stderr}\n${r.stdout}`);
  return r;
}

/**
 * Resolves when the command's stderr has a line matching `re`, or when it ended (the caller's assertions then
 * fail). A child (`sluice()`) or a command in this process (`sluiceInProcess()`).
 */
export function lineSeen(run: SluiceRun | InProcessRun, re: RegExp): Promise<void> {
  if (!('child' in run)) return stderrSeen(run, re);
  return new Promise((resolve) => {
    let text = '';
    const onData = (s: string): void => {
      text += s;
      if (re.test(text)) {
        run.child.stderr?.off('data', onData);
        resolve();
      }
    };
    run.child.stderr?.on('data', onData);
    run.child.once('close', () => resolve());
    if (run.child.exitCode !== null || run.child.signalCode !== null) resolve();
  });
}

function stderrSeen(run: InProcessRun, re: RegExp): Promise<void> {
  return new Promise((resolve) => {
    let text = '';
    const stop = (): void => {
      run.stderrEvents.off('data', onData);
      run.stderrEvents.off('close', stop);
      resolve();
    };
    const onData = (s: string): void => {
      text += s;
      if (re.test(text)) stop();
    };
    run.stderrEvents.on('data', onData);
    run.stderrEvents.once('close', stop);
    if (run.ended) stop();
  });
}

/** A `run` that must succeed; the failure message carries the child's stderr. */
export async function runOk(file: string, service: { url: string } | undefined, ...extra: string[]): Promise<Result> {
  const r = await sluice(['run', file, '--no-progress', ...extra], service ? { service } : {});
  if (r.code !== 0) throw new Error(`sluice run ${path.basename(file)} exited ${r.code}:\n${r.stderr}\n${r.stdout}`);
  return r;
}

/**
 * `sluice run` in this process (the CLI's own entry, output recorded), for a run a test is not about, such as a clean
 * reference output: it spares a child process its start and its DuckDB load. Throws with the run's stderr on failure.
 */
export async function runInProcess(
  file: string,
  service: { url: string } | undefined,
  ...extra: string[]
): Promise<{ stdout: string; stderr: string }> {
  // Imported here: the files that never run in-process need not load the whole CLI.
  const [{ runCli }, { memoryIo }] = await Promise.all([import('../../src/cli/cli.js'), import('../cli/memory-io.js')]);
  const io = memoryIo({ ...(service && { SLUICE_BASE_URL: service.url }), SLUICE_API_KEY: API_KEY });
  const code = await runCli(['run', file, '--no-progress', ...extra], io);
  const out = { stdout: io.stdout.join('\n'), stderr: io.stderr.join('\n') };
  if (code !== 0) throw new Error(`sluice run ${path.basename(file)} (in-process) exited ${code}:\n${out.stderr}`);
  return out;
}

/** Rows of a query over outputs: DuckDB files are attached read-only as `w`; the instance is closed afterwards. */
export async function query(sql: string, opts: { duckdb?: string } = {}): Promise<Obj[]> {
  const instance = await DuckDBInstance.create(':memory:');
  const conn = await instance.connect();
  try {
    await conn.run(`SET TimeZone = 'UTC'`);
    if (opts.duckdb) await conn.run(`ATTACH '${opts.duckdb.replace(/'/g, "''")}' AS w (READ_ONLY)`);
    const reader = await conn.runAndReadAll(sql);
    return reader.getRowObjectsJS().map((row) => {
      const out: Obj = {};
      for (const [k, v] of Object.entries(row)) out[k] = typeof v === 'bigint' ? Number(v) : v;
      return out;
    });
  } finally {
    conn.closeSync();
    instance.closeSync();
  }
}

/** JSON from the emulator, as a client with the key would get it. */
export async function api(emu: { url: string }, method: string, urlPath: string, body?: unknown): Promise<any> {
  const res = await fetch(`${emu.url}${urlPath}`, {
    method,
    headers: {
      authorization: `Bearer ${API_KEY}`,
      ...(body !== undefined && { 'content-type': 'application/json' }),
    },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${urlPath}: ${res.status} ${text}`);
  return JSON.parse(text);
}

/** The emulator's snapshots (all filter jobs it started), with their final metadata. */
export async function snapshots(emu: { url: string }): Promise<Obj[]> {
  const list = (await api(emu, 'GET', '/datasets/snapshots')) as Obj[];
  return Promise.all(list.map((s) => api(emu, 'GET', `/datasets/snapshots/${s.id}`)));
}

export interface Seen {
  method: string;
  path: string;
  query: URLSearchParams;
  /** The request body as text (requests to the service are small: JSON, or a multipart filter). */
  body: string;
}

export interface Proxy {
  url: string;
  /** Every request that passed through, in arrival order. */
  seen: Seen[];
  /** Answers a request itself instead of forwarding it, when it returns true. */
  intercept?: (r: Seen, res: ServerResponse) => boolean;
  /** Sends a request (one `intercept` kept, say) on to the emulator and pipes the answer back, bytes as they are. */
  forward(r: Seen, res: ServerResponse): void;
  close(): Promise<void>;
}

/**
 * A forwarding HTTP proxy in front of the emulator that records each request: the emulator counts per route, and
 * the resume tests need per-part and per-page counts. It can also answer chosen requests itself.
 */
export async function recordingProxy(target: { port: number }): Promise<Proxy> {
  // What a request is forwarded with, exactly as it arrived.
  const raw = new WeakMap<Seen, { url: string; headers: IncomingHttpHeaders; body: Buffer }>();
  const forward = (r: Seen, res: ServerResponse): void => {
    const { url, headers, body } = raw.get(r)!;
    const up = httpRequest({ host: '127.0.0.1', port: target.port, method: r.method, path: url, headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
      answer.once('error', () => res.destroy());
    });
    up.once('error', () => res.destroy());
    res.once('close', () => up.destroy());
    up.end(body);
  };
  const proxy: Proxy = { url: '', seen: [], forward, close: async () => undefined };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.once('end', () => {
      const body = Buffer.concat(chunks);
      const u = new URL(req.url ?? '/', 'http://proxy');
      const r: Seen = { method: req.method ?? 'GET', path: u.pathname, query: u.searchParams, body: body.toString() };
      raw.set(r, { url: req.url ?? '/', headers: req.headers, body });
      proxy.seen.push(r);
      if (!proxy.intercept?.(r, res)) forward(r, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  proxy.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  proxy.close = () =>
    new Promise((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  return proxy;
}

/**
 * An emulator (`opts`) behind a recording proxy, started before the file's tests and closed after them: read
 * `.emu` and `.proxy` inside tests and hooks.
 */
export function emulatorBehindProxy(opts: Partial<EmulatorOptions>): { emu: EmulatorHandle; proxy: Proxy } {
  const started = {} as { emu: EmulatorHandle; proxy: Proxy };
  beforeAll(async () => {
    started.emu = await emulator(opts);
    started.proxy = await recordingProxy(started.emu);
  });
  afterAll(async () => {
    await started.proxy?.close();
    await started.emu?.close();
  });
  return started;
}

/**
 * A SERP crawl that tests hold mid-run (lock, interrupt, run history): two queries of two pages each, read one page
 * at a time, so the first page is committed before HELD_PAGE is asked for. `sinks` are flow-style YAML sink configs;
 * the rows are normalized unless `normalize` is false.
 */
export function serpCrawl(name: string, sinks: string[], opts: { normalize?: boolean } = {}): string {
  return [
    'version: 1',
    `name: ${name}`,
    'service:',
    '  base_url: ${SLUICE_BASE_URL:?}',
    '  api_key: ${SLUICE_API_KEY:?}',
    '  retry: { retries: 1, base_delay_ms: 10 }',
    'source:',
    '  type: serp',
    '  zone: serp_zone',
    '  engine: https://www.google.com',
    "  queries: ['coffee roasters portland', 'ramen berlin']",
    '  max_pages: 2',
    '  concurrency: 1',
    ...(opts.normalize === false ? [] : ['transforms:', '  - { type: normalize, preset: serp_organic }']),
    ...(sinks.length === 1 ? [`sink: ${sinks[0]}`] : ['sinks:', ...sinks.map((s) => `  - ${s}`)]),
    '',
  ].join('\n');
}

/** The page of serpCrawl that tests hold: page 2 of the first query. */
export const HELD_PAGE = 'coffee roasters portland@10';

/** The SERP page a request through the proxy asks for, as `<query>@<start>`. */
export function pageOf(r: Seen): string | undefined {
  if (r.path !== '/request') return undefined;
  const target = new URL((JSON.parse(r.body) as { url: string }).url);
  return `${target.searchParams.get('q')}@${target.searchParams.get('start') ?? 0}`;
}

export interface HeldPage {
  /** Resolves once the request for the page arrived (and is held). */
  reached: Promise<void>;
  /** Lets the held request through to the emulator, and every later one. */
  release(): void;
  /** Drops the held request (its connection is destroyed); later ones pass. */
  drop(): void;
}

/** Holds the first request for `page` (see pageOf) unanswered until `release()` or `drop()`. */
export function holdPage(proxy: Proxy, page = HELD_PAGE): HeldPage {
  let reached!: () => void;
  let held: { r: Seen; res: ServerResponse } | undefined;
  const gate: HeldPage = {
    reached: new Promise<void>((resolve) => (reached = resolve)),
    release() {
      proxy.intercept = undefined;
      if (held) proxy.forward(held.r, held.res);
    },
    drop() {
      proxy.intercept = undefined;
      held?.res.destroy();
    },
  };
  proxy.intercept = (r, res) => {
    if (held || pageOf(r) !== page) return false;
    held = { r, res };
    reached();
    return true;
  };
  return gate;
}

/**
 * How a failed command ended: the last two lines of stderr, `error: <cause>` then `  fix: <what to do>` (log lines
 * before them may name the failing unit).
 */
export function failure(r: Result): { error: string; fix: string } {
  const lines = r.stderr.trimEnd().split('\n');
  return { error: lines.at(-2) ?? '', fix: (lines.at(-1) ?? '').trim() };
}
