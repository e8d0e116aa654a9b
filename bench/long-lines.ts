/**
 * A line that never ends, on every path that reads lines: time against the line's length, which must grow linearly
 * (the MB/s column stays flat, the last lines' ratio near the sizes' ratio). The input is three records, then one line
 * of N MB (the rest of a string) without a newline, as a local file or a download cut short would end.
 *
 *   npx tsx bench/long-lines.ts [--sizes 20,40,80,160,300] [--only copy,duckdb-scan,…] [--repeat 3]
 *
 * Paths: the JS decoders (JSONL, JSON array, CSV: src/decode/) and the raw download's line check (checked-bytes.ts),
 * each reading its file; the native paths' line splitter (src/sink-kit/raw-jsonl/lines.ts) with no limit; the jsonl sink's copy
 * (sinks/jsonl/copy.ts) and DuckDB's staging scan (sinks/duckdb/stage.ts, the native load's record judge) on a file,
 * with the default record size limit (they stop at it) and with none (they read the whole line: still linear); and
 * whole runs (`file` source → jsonl, duckdb, parquet sink, default limits: the native path stops at the limit and
 * the JS decoder dead-letters the line). Files are generated under the system's temp directory and removed.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { finished } from 'node:stream/promises';
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { stageRawJsonl } from '../sinks/duckdb/stage.js';
import { copyCheckedJsonl } from '../src/sink-kit/raw-jsonl/checked-copy.js';
import { JsonlLines } from '../src/sink-kit/raw-jsonl/lines.js';
import { DEFAULT_LIMITS } from '../src/core/limits.js';
import { checkedBytes, decode } from '../src/decode/index.js';
import { silentLogger } from '../src/runtime/logger.js';
import { runPipeline } from '../src/operations/run.js';
import { loadPipeline } from '../src/pipeline/load.js';
import { formatTable } from './lib/table.js';

const MB = 1e6;
const CHUNK = Buffer.alloc(1 << 16, 'x');

/** What comes before the line that never ends, per format. */
const HEADS = {
  jsonl: '{"id":1}\n{"id":2}\n{"id":3}\n{"id":4,"pad":"',
  json: '[{"id":1},{"id":2},{"id":3},{"id":4,"pad":"',
  csv: 'id,pad\n1,a\n2,b\n3,c\n4,"',
};

type Format = keyof typeof HEADS;

/** The head, then `bytes` of the endless line. */
async function* endless(head: string, bytes: number): AsyncGenerator<Buffer> {
  yield Buffer.from(head);
  for (let sent = 0; sent < bytes; sent += CHUNK.length) yield CHUNK.subarray(0, Math.min(CHUNK.length, bytes - sent));
}

async function writeInput(file: string, format: Format, bytes: number): Promise<void> {
  const out = createWriteStream(file);
  for await (const chunk of endless(HEADS[format], bytes))
    if (!out.write(chunk)) await new Promise<void>((r) => out.once('drain', () => r()));
  await finished(out.end());
}

/** The input file of `format`, read as a source or a download would hand it over. */
function read(c: Ctx, format: Format): AsyncIterable<Buffer> {
  return createReadStream(c.files[format], { highWaterMark: 1 << 16 }) as AsyncIterable<Buffer>;
}

/** Whatever a path answers (a count, or what it threw), short, for the table. */
function outcome(v: unknown): string {
  const text = v instanceof Error ? `refused: ${v.message}` : String(v);
  return text.length > 60 ? `${text.slice(0, 57)}…` : text;
}

interface Ctx {
  bytes: number;
  /** The JSONL input, and each format's. */
  file: string;
  files: Record<Format, string>;
  dir: string;
}

type PathCase = (c: Ctx) => Promise<unknown>;

async function decodeAll(c: Ctx, format: Format): Promise<string> {
  let records = 0;
  let letters = 0;
  const opts = { format, unit: 'bench', deadLetter: () => void letters++ };
  for await (const batch of decode(read(c, format), opts)) records += batch.length;
  return `${records} records, ${letters} dead letter(s)`;
}

async function runOnce(c: Ctx, sink: 'jsonl' | 'duckdb' | 'parquet'): Promise<string> {
  const name = `${sink}_${c.bytes}`;
  const yaml = path.join(c.dir, `${name}.yaml`);
  const sinkYaml =
    sink === 'duckdb' ? `{ type: duckdb, path: out/${name}.duckdb, table: t }` : `{ type: ${sink}, path: out/${name} }`;
  await writeFile(
    yaml,
    [
      'version: 1',
      `name: ${name}`,
      'service: { base_url: emulator, api_key: emulator-key }',
      `source: { type: file, paths: [${path.basename(c.file)}], format: jsonl, incremental: false }`,
      `sink: ${sinkYaml}`,
      '',
    ].join('\n'),
  );
  const s = await runPipeline(
    await loadPipeline(yaml),
    { fresh: false, logFormat: 'text', quiet: true, progress: false },
    { log: silentLogger },
  );
  return `${s.records} records, ${s.deadLetters} dead letter(s), ${s.nativeFallbacks} native refusal(s)`;
}

const CASES: Record<string, PathCase> = {
  'decode-jsonl': (c) => decodeAll(c, 'jsonl'),
  'decode-json': (c) => decodeAll(c, 'json'),
  'decode-csv': (c) => decodeAll(c, 'csv'),
  'checked-bytes': async (c) => {
    let out = 0;
    let letters = 0;
    const opts = { format: 'jsonl' as const, unit: 'bench', deadLetter: () => void letters++ };
    for await (const chunk of checkedBytes(read(c, 'jsonl'), opts)) out += chunk.length;
    return `${out} bytes kept, ${letters} dead letter(s)`;
  },
  'raw-jsonl-lines': async (c) => {
    let lines = 0;
    const reader = new JsonlLines(Infinity, () => void lines++);
    for await (const chunk of read(c, 'jsonl')) reader.push(chunk);
    reader.end();
    return `${lines} lines`;
  },
  copy: (c) =>
    copyCheckedJsonl(c.file, path.join(c.dir, 'copy.jsonl'), undefined, {
      maxLineBytes: DEFAULT_LIMITS.maxRecordBytes,
    }),
  'copy-no-limit': (c) => copyCheckedJsonl(c.file, path.join(c.dir, 'copy.jsonl'), undefined),
  'duckdb-scan': (c) => stageRawJsonl(c.file, path.join(c.dir, 'stage.json'), undefined, DEFAULT_LIMITS.maxRecordBytes),
  'duckdb-scan-no-limit': (c) => stageRawJsonl(c.file, path.join(c.dir, 'stage.json')),
  'run-jsonl': (c) => runOnce(c, 'jsonl'),
  'run-duckdb': (c) => runOnce(c, 'duckdb'),
  'run-parquet': (c) => runOnce(c, 'parquet'),
};

async function main(): Promise<void> {
  const argv = await yargs(hideBin(process.argv))
    .option('sizes', { type: 'string', default: '20,40,80,160,300', describe: 'Line lengths in MB' })
    .option('only', { type: 'string', describe: `Some of: ${Object.keys(CASES).join(', ')}` })
    .option('repeat', { type: 'number', default: 3, describe: 'Runs per path and size; the fastest counts' })
    .strict()
    .parse();
  const sizes = argv.sizes.split(',').map(Number);
  const names = argv.only ? argv.only.split(',') : Object.keys(CASES);
  for (const n of names) if (!(n in CASES)) throw new Error(`unknown case ${n}`);
  const results = new Map<string, { mb: number; s: number; answer: string }[]>();
  const dir = await mkdtemp(path.join(os.tmpdir(), 'sluice-bench-long-lines-'));
  try {
    for (const mb of sizes) {
      const files = {} as Record<Format, string>;
      for (const format of Object.keys(HEADS) as Format[]) {
        files[format] = path.join(dir, `endless-${mb}.${format}`);
        await writeInput(files[format], format, mb * MB);
      }
      for (const name of names) {
        let best = Infinity;
        let answer = '';
        for (let i = 0; i < argv.repeat; i++) {
          const started = performance.now();
          const ctx = { bytes: mb * MB, file: files.jsonl, files, dir };
          answer = outcome(await CASES[name]!(ctx).catch((e: unknown) => e));
          best = Math.min(best, (performance.now() - started) / 1000);
        }
        results.set(name, [...(results.get(name) ?? []), { mb, s: best, answer }]);
        process.stderr.write(`${name} ${mb} MB: ${best.toFixed(3)} s\n`);
      }
      for (const f of Object.values(files)) await rm(f, { force: true });
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  const rows = [['path', 'MB', 's', 'MB/s', 'answer']];
  for (const [name, runs] of results)
    for (const r of runs) rows.push([name, String(r.mb), r.s.toFixed(3), (r.mb / r.s).toFixed(0), r.answer]);
  console.log(formatTable(rows));
  // Against a middle size, not the smallest: a run of a few milliseconds says more about the machine than the path.
  const base = sizes[Math.floor(sizes.length / 2)]!;
  const last = sizes[sizes.length - 1]!;
  const k = last / base;
  console.log(
    `\ntime at ${last} MB over time at ${base} MB (linear: ${k.toFixed(1)}×; quadratic: ${(k * k).toFixed(0)}×)`,
  );
  for (const [name, runs] of results) {
    const a = runs.find((r) => r.mb === base)!;
    const b = runs.find((r) => r.mb === last)!;
    console.log(`  ${name}: ${(b.s / a.s).toFixed(1)}×`);
  }
}

await main();
