/**
 * The crawl benchmark (`npm run bench`): the `serp` source against the emulator with a fixed response latency.
 *
 * - Throughput: with latency L and concurrency c, an ideal crawl completes c / L pages per second — c at most 20,
 *   the requests the client's one 429 budget lets in flight per service address (client/throttle.ts). Each level
 *   crawls enough queries for ~`rounds` full rounds of c requests (page 1 of each query, `max_pages: 1`, so every
 *   unit is independent and the level measures the source's concurrency, not the shape of the query chains).
 *   Target: at least 90% of ideal. `scaling` compares with c × the measured rate of concurrency 1, which takes out
 *   the fixed cost of one round trip (HTTP, page generation) that the ideal does not count.
 * - Rate-limit accuracy: a crawl with `rate_limit` and more than enough concurrency; the achieved rate is the
 *   request starts per second between the first and the last start. Target: within ±5% of the configured rate.
 *
 * The client is created as the engine creates it for a pipeline without `service.connections`, so the bench runs
 * the shipped transport settings. Each level also reports where the time went: the mean time of one page request
 * (the fetcher's call into the client until the page is parsed; the emulator answers `latency` ms after a request
 * arrives, its own work included) and the event-loop time per page of each thread: the client's (the source, the
 * client, undici) and the emulator's (reported, not subtracted: the ideal counts the latency alone).
 */
import type { ServiceClient } from '../src/client/index.js';
import { createClient } from '../src/client/index.js';
import { DEFAULT_429_BUDGET } from '../src/client/throttle.js';
import type { Logger, SourceContext } from '../src/core/types.js';
import type { ComponentDeps } from '../src/contracts/component.js';
import { performance, type EventLoopUtilization } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { MemoryStateStore } from '../src/state/state-store.js';
import { PaidLedger } from '../src/state/paid-ledger.js';
import { serpSchema, serpSource } from '../src/sources/serp.js';
import { driveCrawl } from '../test/support/drive-crawl.js';

export interface CrawlBenchOptions {
  latencyMs?: number;
  concurrencies?: number[];
  /** Full rounds of `concurrency` requests per level. */
  rounds?: number;
  /** Configured rate of the accuracy run, requests per second. */
  rate?: number;
  /** Seconds the accuracy run lasts (about). */
  rateSeconds?: number;
  /** Where the table goes (default: stdout). */
  print?: (line: string) => void;
}

export interface ThroughputRow {
  concurrency: number;
  pages: number;
  seconds: number;
  pagesPerSec: number;
  idealPerSec: number;
  /** pagesPerSec / idealPerSec. */
  efficiency: number;
  /** pagesPerSec / (concurrency × the pages/s of concurrency 1): how well the crawl scales, whatever the round trip. */
  scaling: number;
  maxInFlight: number;
  /** Mean ms of one page request, from the fetcher's call into the client until the page is parsed. */
  requestMs: number;
  /** Event-loop (CPU) ms per page on the crawl's thread: source, client, undici. */
  clientMsPerPage: number;
  /** Event-loop (CPU) ms per page on the emulator's thread (reported, not subtracted from anything). */
  emulatorMsPerPage: number;
}

export interface CrawlBenchResult {
  latencyMs: number;
  throughput: ThroughputRow[];
  rate: { configured: number; achieved: number; errorPct: number; requests: number; seconds: number };
  /** Every level ≥ 90% of ideal and the rate within ±5%. */
  ok: boolean;
}

const API_KEY = 'bench-key';

export async function runCrawlBench(opts: CrawlBenchOptions = {}): Promise<CrawlBenchResult> {
  const latencyMs = opts.latencyMs ?? 100;
  const concurrencies = opts.concurrencies ?? [1, 8, 32, 64];
  const rounds = opts.rounds ?? 30;
  const rate = opts.rate ?? 50;
  const rateSeconds = opts.rateSeconds ?? 4;
  const print = opts.print ?? ((line: string) => process.stdout.write(`${line}\n`));

  const emu = await startEmulatorThread({ apiKey: API_KEY, latencyMs, seed: 1 });
  // No `connections`: the pool the engine gives a pipeline that does not set `service.connections`.
  const client = createClient({ baseUrl: emu.url, apiKey: API_KEY });
  const starts: number[] = [];
  const requests = { count: 0, totalMs: 0 };
  const deps: ComponentDeps = {
    log: silent,
    baseDir: process.cwd(),
    client: async () => timed(client, starts, requests),
  };
  try {
    // Warm the connections and the JIT so the first level does not pay for them.
    await crawl(deps, 8, 16, 'warmup', {});

    const throughput: ThroughputRow[] = [];
    for (const c of concurrencies) {
      await emu.resetStats();
      const pages = c * rounds;
      requests.count = requests.totalMs = 0;
      const clientElu = performance.eventLoopUtilization();
      const emuElu = emu.elu();
      const seconds = await crawl(deps, c, pages, `c${c}`, {});
      const clientActive = performance.eventLoopUtilization(clientElu).active;
      const emuActive = emu.elu(emuElu).active;
      const pagesPerSec = pages / seconds;
      // The client's 429 budget holds any crawl to 20 requests in flight: the ideal counts what it allows.
      const inFlight = Math.min(c, DEFAULT_429_BUDGET);
      const idealPerSec = (inFlight * 1000) / latencyMs;
      throughput.push({
        concurrency: c,
        pages,
        seconds,
        pagesPerSec,
        idealPerSec,
        efficiency: pagesPerSec / idealPerSec,
        scaling: throughput[0] ? pagesPerSec / ((throughput[0].pagesPerSec * inFlight) / throughput[0].concurrency) : 1,
        maxInFlight: (await emu.stats()).routeMaxInFlight['POST /request'] ?? 0,
        requestMs: requests.totalMs / requests.count,
        clientMsPerPage: clientActive / pages,
        emulatorMsPerPage: emuActive / pages,
      });
    }

    starts.length = 0;
    const rateRequests = Math.round(rate * rateSeconds) + 1;
    const rateConcurrency = Math.max(4, Math.ceil((rate * latencyMs * 2) / 1000));
    await crawl(deps, rateConcurrency, rateRequests, 'rate', { rate_limit: `${rate}/s` });
    const span = (starts[starts.length - 1]! - starts[0]!) / 1000;
    const achieved = (starts.length - 1) / span;
    const errorPct = ((achieved - rate) / rate) * 100;

    const result: CrawlBenchResult = {
      latencyMs,
      throughput,
      rate: { configured: rate, achieved, errorPct, requests: starts.length, seconds: span },
      ok: throughput.every((t) => t.efficiency >= 0.9) && Math.abs(errorPct) <= 5,
    };
    printTable(result, print);
    return result;
  } finally {
    await client.close();
    await emu.close();
  }
}

interface EmulatorThread {
  url: string;
  /** The emulator thread's event-loop utilization (since `since`, when given). */
  elu(since?: EventLoopUtilization): EventLoopUtilization;
  stats(): Promise<{ routeMaxInFlight: Record<string, number> }>;
  resetStats(): Promise<void>;
  close(): Promise<void>;
}

/** The emulator on a worker thread (see crawl-emulator-worker.ts); its counters are read over HTTP. */
async function startEmulatorThread(options: Record<string, unknown>): Promise<EmulatorThread> {
  const ts = import.meta.url.endsWith('.ts');
  const entry = new URL(`./crawl-emulator-worker.${ts ? 'ts' : 'js'}`, import.meta.url).href;
  // Under tsx (npm run bench) a worker does not inherit the TypeScript loader: register it in the worker first.
  const worker = ts
    ? new Worker(
        `import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))}).then(({ register }) => { register(); return import(${JSON.stringify(entry)}); })`,
        { eval: true, workerData: options },
      )
    : new Worker(new URL(entry), { workerData: options });
  const url = await new Promise<string>((resolve, reject) => {
    worker.once('message', (m: { url: string }) => resolve(m.url));
    worker.once('error', reject);
  });
  const statsUrl = `${url}/_emulator/stats`;
  return {
    url,
    elu: (since) => worker.performance.eventLoopUtilization(since),
    stats: async () => (await (await fetch(statsUrl)).json()) as { routeMaxInFlight: Record<string, number> },
    resetStats: async () => void (await fetch(statsUrl, { method: 'DELETE' })).body?.cancel(),
    close: async () => {
      worker.postMessage('close');
      await new Promise((resolve) => worker.once('exit', resolve));
    },
  };
}

/** Crawls `pages` single-page queries; returns the seconds it took. */
async function crawl(
  deps: ComponentDeps,
  concurrency: number,
  pages: number,
  tag: string,
  extra: Record<string, unknown>,
): Promise<number> {
  const queries = Array.from({ length: pages }, (_, i) => `bench ${tag} query ${i}`);
  const cfg = serpSchema.parse({ type: 'serp', zone: 'serp_zone', queries, max_pages: 1, concurrency, ...extra });
  const source = serpSource.create(cfg, deps);
  const state = new MemoryStateStore();
  const ctx: SourceContext = {
    signal: new AbortController().signal,
    log: silent,
    state,
    paid: PaidLedger.open(state, 1),
    counters: { records: 0, bytes: 0, retries: 0, deadLetters: 0 },
    deadLetter: () => undefined,
    baseDir: deps.baseDir,
    dryRun: false,
  };
  const result = await driveCrawl(source, ctx, { concurrency });
  if (result.error !== undefined) throw result.error;
  if (result.committed.length !== pages)
    throw new Error(`crawl bench ${tag}: ${result.committed.length} pages committed, expected ${pages}`);
  return result.durationMs / 1000;
}

/** The client with each page request's start time and duration recorded. */
function timed(client: ServiceClient, starts: number[], requests: { count: number; totalMs: number }): ServiceClient {
  return {
    ...client,
    request: {
      page: async (req, o) => {
        const started = performance.now();
        starts.push(started);
        const page = await client.request.page(req, o);
        requests.count++;
        requests.totalMs += performance.now() - started;
        return page;
      },
    },
  } as ServiceClient;
}

function printTable(r: CrawlBenchResult, print: (line: string) => void): void {
  print(`crawl benchmark (serp source, emulator latency ${r.latencyMs} ms)`);
  print(
    '  concurrency    pages   seconds   pages/s   ideal/s   of ideal   scaling   max in flight' +
      '   request ms   client ms/page   emulator ms/page',
  );
  for (const t of r.throughput)
    print(
      `  ${pad(t.concurrency, 11)}  ${pad(t.pages, 7)}  ${pad(t.seconds.toFixed(2), 8)}  ${pad(t.pagesPerSec.toFixed(1), 8)}  ` +
        `${pad(t.idealPerSec.toFixed(0), 8)}  ${pad(pct(t.efficiency), 9)}  ${pad(pct(t.scaling), 8)}  ${pad(t.maxInFlight, 14)}` +
        `  ${pad(t.requestMs.toFixed(1), 11)}  ${pad(t.clientMsPerPage.toFixed(2), 15)}  ${pad(t.emulatorMsPerPage.toFixed(2), 17)}` +
        `${t.efficiency >= 0.9 ? '' : '   < 90%'}`,
    );
  const x = r.rate;
  print(
    `  rate limit: configured ${x.configured}/s, achieved ${x.achieved.toFixed(2)}/s over ${x.requests} requests ` +
      `in ${x.seconds.toFixed(2)} s (${x.errorPct >= 0 ? '+' : ''}${x.errorPct.toFixed(2)}%, target ±5%)`,
  );
  print(`  ${r.ok ? 'ok' : 'BELOW TARGET'}`);
}

function pct(x: number): string {
  return `${(x * 100).toFixed(1)}%`;
}

function pad(v: string | number, n: number): string {
  return String(v).padStart(n);
}

const silent: Logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };
