/**
 * Snapshot download memory: does the client's memory stay flat as snapshots grow?
 *
 *   npx tsx bench/snapshot-rss.ts [--records 100000,1000000] [--batch-size 100000] [--format jsonl|json|csv]
 *                                 [--compress true|false]
 *
 * For each size N, a fresh measuring process starts the emulator as a CHILD process (so the figures are the
 * client's alone: the emulator generating records lives in another process, and its own peak is reported
 * separately), starts a filter job matching every record of an N-record dataset through the client, waits for it
 * with `pollSnapshot`, then downloads every part through `client.datasets.download`, gunzipping and counting
 * records (newline bytes; CSV rows or array items are not parsed) and discarding them. It prints records, bytes
 * on the wire and decompressed, seconds, and the peak RSS of the downloading process (getrusage maxRSS, which
 * includes the ~100 MB of Node + tsx baseline) and of the emulator.
 *
 * Roles of this one file: no role flag = orchestrate sizes; `--measure N` = one measurement; `--serve N` = the
 * emulator child.
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { createGunzip } from 'node:zlib';
import { createClient, pollSnapshot } from '../src/client/index.js';
import { COMPANY_PROFILES_ID } from '../src/emulator/data/company-profiles.js';
import { startEmulator } from '../src/emulator/server.js';

const SELF = fileURLToPath(import.meta.url);
const args = parseArgs(process.argv.slice(2));

interface Result {
  records: number;
  counted: number;
  parts: number;
  wireBytes: number;
  bytes: number;
  filterSeconds: number;
  downloadSeconds: number;
  clientPeakRssMb: number;
  clientPeakHeapMb: number;
  emulatorPeakRssMb: number;
}

if (args.serve !== undefined) await serve(Number(args.serve));
else if (args.measure !== undefined) process.stdout.write(JSON.stringify(await measure(Number(args.measure))) + '\n');
else await orchestrate();

async function orchestrate(): Promise<void> {
  const sizes = (args.records ?? '100000,1000000').split(',').map(Number);
  const rows: Result[] = [];
  for (const n of sizes) {
    const extra = ['batch-size', 'format', 'compress'].flatMap((k) => (args[k] ? [`--${k}`, args[k]!] : []));
    const line = await runChild(['--measure', String(n), ...extra]);
    const r = JSON.parse(line) as Result;
    rows.push(r);
    console.log(
      `${r.records.toLocaleString('en')} records: ${r.counted.toLocaleString('en')} counted in ${r.parts} part(s), ` +
        `${mb(r.wireBytes)} MB on the wire, ${mb(r.bytes)} MB decompressed; filter job ${r.filterSeconds.toFixed(1)} s, ` +
        `download ${r.downloadSeconds.toFixed(1)} s (${Math.round(r.counted / r.downloadSeconds).toLocaleString('en')} rec/s); ` +
        `peak RSS client ${r.clientPeakRssMb} MB (heap ${r.clientPeakHeapMb} MB), emulator ${r.emulatorPeakRssMb} MB`,
    );
  }
  if (rows.length > 1) {
    const first = rows[0]!;
    const last = rows[rows.length - 1]!;
    console.log(
      `client peak RSS ×${(last.clientPeakRssMb / first.clientPeakRssMb).toFixed(2)} for ×${last.records / first.records} records`,
    );
  }
}

async function measure(n: number): Promise<Result> {
  const batchSize = Number(args['batch-size'] ?? 100_000);
  const format = (args.format ?? 'jsonl') as 'jsonl' | 'json' | 'csv';
  const compress = (args.compress ?? 'true') === 'true';

  let peakRss = 0;
  let peakHeap = 0;
  const sample = (): void => {
    const m = process.memoryUsage();
    peakRss = Math.max(peakRss, m.rss);
    peakHeap = Math.max(peakHeap, m.heapUsed);
  };
  const sampler = setInterval(sample, 50);

  const emulator = startChild(['--serve', String(n)]);
  const url = await emulator.firstLine;
  const client = createClient({ baseUrl: url, apiKey: 'emulator-key' });
  try {
    const t0 = performance.now();
    const { snapshot_id } = await client.datasets.filter({
      dataset_id: COMPANY_PROFILES_ID,
      filter: { name: 'followers', operator: '>=', value: 0 },
      records_limit: n,
    });
    const meta = await pollSnapshot(client, snapshot_id, { intervalMs: 200, maxIntervalMs: 1000, timeoutMs: 600_000 });
    const filterSeconds = (performance.now() - t0) / 1000;
    if (meta.dataset_size !== n) throw new Error(`expected ${n} records, the snapshot has ${meta.dataset_size}`);

    const params = { format, compress, batch_size: batchSize };
    const { parts } = await client.datasets.parts(snapshot_id, params);
    const t1 = performance.now();
    let counted = 0;
    let wireBytes = 0;
    let bytes = 0;
    for (let part = 1; part <= parts; part++) {
      const dl = await client.datasets.download(snapshot_id, { ...params, part });
      const counter = async function* (src: AsyncIterable<Buffer>): AsyncIterable<Buffer> {
        for await (const c of src) {
          wireBytes += c.length;
          yield c;
        }
      };
      const wire = counter(dl.body);
      const plain = compress ? gunzip(wire) : wire;
      for await (const c of plain) {
        bytes += c.length;
        for (let i = c.indexOf(10); i !== -1; i = c.indexOf(10, i + 1)) counted++;
      }
      sample();
    }
    const downloadSeconds = (performance.now() - t1) / 1000;
    // Newlines count JSONL records; a JSON array adds 2 lines, CSV adds its header row per part.
    if (format === 'json') counted -= 2 * parts;
    if (format === 'csv') counted -= parts;
    sample();
    clearInterval(sampler);
    const emulatorPeak = await emulator.stop();
    return {
      records: n,
      counted,
      parts,
      wireBytes,
      bytes,
      filterSeconds,
      downloadSeconds,
      clientPeakRssMb: Math.round(Math.max(peakRss / 2 ** 20, process.resourceUsage().maxRSS / 1024)),
      clientPeakHeapMb: Math.round(peakHeap / 2 ** 20),
      emulatorPeakRssMb: Math.round(emulatorPeak / 1024),
    };
  } finally {
    await client.close();
  }
}

/** gunzip with 64 KiB output chunks (the 16 KiB default is markedly slower). */
async function* gunzip(src: AsyncIterable<Buffer>): AsyncIterable<Buffer> {
  const gz = createGunzip({ chunkSize: 64 * 1024 });
  const feed = (async () => {
    for await (const c of src) if (!gz.write(c)) await new Promise((r) => gz.once('drain', r));
    gz.end();
  })();
  feed.catch((e: unknown) => gz.destroy(e as Error));
  for await (const c of gz as AsyncIterable<Buffer>) yield c;
  await feed;
}

/** The emulator child: prints its URL, then on stdin EOF closes and prints its peak RSS (KiB). */
async function serve(n: number): Promise<void> {
  const emu = await startEmulator({ size: n, seed: 1, timeScale: 1000 });
  process.stdout.write(emu.url + '\n');
  process.stdin.resume();
  process.stdin.on('end', () => {
    void emu.close().then(() => {
      process.stdout.write(`${process.resourceUsage().maxRSS}\n`);
      process.exit(0);
    });
  });
}

function startChild(childArgs: string[]): { firstLine: Promise<string>; stop(): Promise<number> } {
  const child = spawn(process.execPath, [...process.execArgv, SELF, ...childArgs], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout });
  const queue: string[] = [];
  const waiters: ((l: string) => void)[] = [];
  lines.on('line', (l) => (waiters.length ? waiters.shift()!(l) : queue.push(l)));
  const next = (): Promise<string> =>
    queue.length ? Promise.resolve(queue.shift()!) : new Promise((r) => waiters.push(r));
  return {
    firstLine: next(),
    async stop() {
      child.stdin.end();
      return Number(await next());
    },
  };
}

function runChild(childArgs: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...process.execArgv, SELF, ...childArgs], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.on('exit', (code) =>
      code === 0 ? resolve(out.trim().split('\n').pop()!) : reject(new Error(`exit ${code}`)),
    );
  });
}

function parseArgs(argv: string[]): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a.startsWith('--')) out[a.slice(2)] = argv[i + 1]?.startsWith('--') ? 'true' : argv[++i];
  }
  return out;
}

function mb(n: number): string {
  return (n / 1e6).toFixed(0);
}
