/**
 * Decoder throughput on company-profile-like records, against the JS floor (gunzip + split on newline bytes +
 * JSON.parse, no decoder around it).
 *
 *   npx tsx bench/decode.ts --records 50000            # all formats, gzip and plain
 *   npx tsx bench/decode.ts --records 200000 --cases floor,jsonl.gz,json.gz,json-compact.gz,csv.gz
 *   npx tsx bench/decode.ts --batch-sizes 500,2000,5000 --batch-bytes 1048576 --cases jsonl.gz
 *   npx tsx bench/decode.ts --repeat 3                  # best of 3 rounds per case
 *   npx tsx bench/decode.ts --cases floor,csv.gz,csv-parse   # the CSV parser against csv-parse
 *   npx tsx bench/decode.ts --cases floor,json.gz,stream-json  # the JSON array scanner against stream-json
 *
 * Inputs are generated once into `--dir` (default: <tmpdir>/sluice-bench-decode) and reused. Ratios are what to
 * compare: identical runs on the same machine differ by up to 1.4×, so only ratios from one run mean much.
 */
import { createReadStream, existsSync } from 'node:fs';
import { mkdir, rename, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip, createGzip } from 'node:zlib';
import { createWriteStream } from 'node:fs';
import { parse as csvParse } from 'csv-parse';
import streamArray from 'stream-json/streamers/stream-array.js';
import { decode } from '../src/decode/index.js';
import { companyRecord, csvHeader, csvRow } from './lib/company-records.js';
import { countBatches, countJsonl } from './lib/jsonl-floor.js';

/** `json`: one element per line, as the emulator writes arrays; `json-compact`: the whole array on one line. */
export type BenchFormat = 'jsonl' | 'json' | 'json-compact' | 'csv';

/** Text of `n` records in one format, produced in blocks so that generating 200k records stays flat in memory. */
export async function* formatText(format: BenchFormat, n: number, seed = 1): AsyncGenerator<string> {
  const header = csvHeader(companyRecord(0, seed));
  if (format === 'json' || format === 'json-compact') yield '[';
  if (format === 'csv') yield header.join(',') + '\r\n';
  for (let at = 0; at < n; at += 1000) {
    let block = '';
    for (let i = at; i < Math.min(n, at + 1000); i++) {
      const rec = companyRecord(i, seed);
      if (format === 'jsonl') block += JSON.stringify(rec) + '\n';
      else if (format === 'json') block += (i > 0 ? ',\n' : '\n') + JSON.stringify(rec);
      else if (format === 'json-compact') block += (i > 0 ? ',' : '') + JSON.stringify(rec);
      else block += csvRow(rec, header) + '\r\n';
    }
    yield block;
  }
  if (format === 'json') yield '\n]\n';
  if (format === 'json-compact') yield ']';
}

/** Writes `<dir>/companies-<n>.<format>[.gz]` unless present; returns its path. */
export async function benchFile(dir: string, format: BenchFormat, n: number, gzip: boolean): Promise<string> {
  const file = path.join(dir, `companies-${n}.${format}${gzip ? '.gz' : ''}`);
  if (existsSync(file)) return file;
  await mkdir(dir, { recursive: true });
  const tmp = `${file}.tmp-${process.pid}`;
  const text = Readable.from(formatText(format, n));
  if (gzip) await pipeline(text, createGzip({ level: 6 }), createWriteStream(tmp));
  else await pipeline(text, createWriteStream(tmp));
  await rename(tmp, file);
  return file;
}

export interface Measurement {
  name: string;
  seconds: number;
  /** User + system CPU of the whole process (gunzip runs on libuv's threads): steadier than wall time on a busy machine. */
  cpuSeconds: number;
  records: number;
  inputBytes: number;
  peakRssMb: number;
}

/** The floor: gunzip (64 KiB chunks) + split on newline bytes + JSON.parse per line, nothing else. */
export async function measureFloor(file: string): Promise<Measurement> {
  return timed('floor (gunzip+split+parse)', file, () => countJsonl(file));
}

/**
 * The alternative src/decode/csv.ts replaced: csv-parse's stream (`columns: false`, objects built from the header
 * row, nested JSON cells decoded as the decoder does). Kept so the choice can be re-measured.
 */
export async function measureCsvParse(file: string): Promise<Measurement> {
  return timed('csv-parse (for comparison)', file, () => csvParseRecords(file));
}

export async function csvParseRecords(file: string): Promise<number> {
  let records = 0;
  let header: string[] | null = null;
  for await (const rec of inputBytes(file).pipe(csvParse({ bom: true, relax_column_count: true })) as AsyncIterable<
    string[]
  >) {
    if (header === null) {
      header = rec;
      continue;
    }
    const row: Record<string, unknown> = {};
    for (let k = 0; k < rec.length; k++) {
      const v = rec[k]!;
      const c = v.charCodeAt(0);
      row[header[k]!] = v === '' ? null : c === 0x5b || c === 0x7b ? JSON.parse(v) : v;
    }
    records++;
  }
  return records;
}

/** What src/decode/json-array.ts replaced: stream-json's parser + StreamArray over a top-level array. */
export async function streamJsonRecords(file: string): Promise<number> {
  let records = 0;
  for await (const _item of inputBytes(file).pipe(streamArray.withParserAsStream()) as AsyncIterable<unknown>)
    records++;
  return records;
}

export interface Batching {
  batchSize?: number;
  batchBytes?: number;
}

export async function measureDecode(
  file: string,
  format: BenchFormat,
  batching: Batching = {},
  name = `decode ${path.basename(file).replace(/^companies-\d+\./, '')}`,
): Promise<Measurement> {
  return timed(name, file, () => decodeRecords(file, format, batching));
}

/** Records of `file` through sluice's decoder (src/decode); throws if any record was dead-lettered. */
export async function decodeRecords(file: string, format: BenchFormat, batching: Batching = {}): Promise<number> {
  const deadLetters: string[] = [];
  const batches = decode(createReadStream(file, { highWaterMark: 1 << 16 }), {
    format: format === 'json-compact' ? 'json' : format,
    unit: 'bench',
    deadLetter: (d) => deadLetters.push(d.reason),
    ...(format === 'csv' && { jsonColumns: 'auto' as const }),
    ...batching,
  });
  const records = await countBatches(batches);
  if (deadLetters.length > 0) throw new Error(`${deadLetters.length} dead letters, first: ${deadLetters[0]}`);
  return records;
}

/** The file's bytes, gunzipped (64 KiB chunks) when its name ends in `.gz`. */
function inputBytes(file: string): NodeJS.ReadableStream {
  const source = createReadStream(file, { highWaterMark: 1 << 16 });
  return file.endsWith('.gz') ? source.pipe(createGunzip({ chunkSize: 1 << 16 })) : source;
}

async function timed(name: string, file: string, run: () => Promise<number>): Promise<Measurement> {
  globalThis.gc?.();
  let peak = process.memoryUsage.rss();
  // Sampled rather than getrusage's lifetime peak: one process measures several cases in turn.
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 20);
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const records = await run().finally(() => clearInterval(sampler));
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const cpuSeconds = (cpu.user + cpu.system) / 1e6;
  return {
    name,
    seconds,
    cpuSeconds,
    records,
    inputBytes: (await stat(file)).size,
    peakRssMb: Math.round(Math.max(peak, process.memoryUsage.rss()) / 2 ** 20),
  };
}

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : (process.argv[i + 1] ?? fallback);
}

async function main(): Promise<void> {
  const n = Number(arg('records', '50000'));
  const dir = arg('dir', path.join(os.tmpdir(), 'sluice-bench-decode'));
  const cases = arg('cases', 'floor,jsonl.gz,json.gz,json-compact.gz,csv.gz,jsonl,json,csv').split(',');
  const batchSizes = arg('batch-sizes', '').split(',').filter(Boolean).map(Number);
  const batchBytes = arg('batch-bytes', '').split(',').filter(Boolean).map(Number);
  const repeat = Number(arg('repeat', '1'));
  const all: Measurement[] = [];
  for (let round = 0; round < repeat; round++)
    for (const c of cases) {
      if (c === 'floor') {
        all.push(await measureFloor(await benchFile(dir, 'jsonl', n, true)));
        continue;
      }
      if (c === 'csv-parse') {
        all.push(await measureCsvParse(await benchFile(dir, 'csv', n, true)));
        continue;
      }
      if (c === 'stream-json') {
        const file = await benchFile(dir, 'json', n, true);
        all.push(await timed('stream-json StreamArray', file, () => streamJsonRecords(file)));
        continue;
      }
      const [format, gz] = c.split('.') as [BenchFormat, string | undefined];
      const file = await benchFile(dir, format, n, gz === 'gz');
      if (batchSizes.length + batchBytes.length === 0) all.push(await measureDecode(file, format));
      for (const size of batchSizes)
        all.push(await measureDecode(file, format, { batchSize: size }, `decode ${c} ${size} rec`));
      for (const bytes of batchBytes)
        all.push(await measureDecode(file, format, { batchBytes: bytes }, `decode ${c} ${bytes >> 10} KiB`));
    }
  // With --repeat, the fastest of the rounds: the least disturbed by GC and the machine's other work.
  const results = [...new Map(all.map((m) => [m.name, m])).keys()].map((name) =>
    all.filter((m) => m.name === name).reduce((a, b) => (b.seconds < a.seconds ? b : a)),
  );
  const floor = results.find((r) => r.name.startsWith('floor'));
  console.log(`${n} records; ${os.cpus().length} cores; node ${process.version}`);
  for (const r of results) {
    const ratio = floor
      ? `  ${(r.seconds / floor.seconds).toFixed(2)}× floor (cpu ${(r.cpuSeconds / floor.cpuSeconds).toFixed(2)}×)`
      : '';
    console.log(
      `${r.name.padEnd(30)} ${r.seconds.toFixed(2).padStart(6)} s  cpu ${r.cpuSeconds.toFixed(2).padStart(6)} s  ` +
        `${String(r.records).padStart(8)} rec  ` +
        `${(r.inputBytes / 2 ** 20).toFixed(0).padStart(5)} MB in  peak rss ${String(r.peakRssMb).padStart(4)} MB${ratio}`,
    );
  }
}

if (import.meta.url === `file://${process.argv[1]}` || process.argv[1]?.endsWith('bench/decode.ts')) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
