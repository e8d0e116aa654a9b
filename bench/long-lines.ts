/**
 * A line that never ends, on every path that reads lines: time against the line's length, which must grow linearly
 * (the MB/s column stays flat). The input is three records, then one line of N MB (the rest of a string) without a
 * newline, as a local file or a download cut short would end.
 *
 *   npx tsx bench/long-lines.ts [--sizes 20,40,80,160,300] [--only copy,duckdb-scan,…]
 *
 * Paths: the JS decoders (JSONL, JSON array, CSV: src/decode/) and the raw download's line check (checked-bytes.ts),
 * fed from memory; the native paths' line splitter (sinks/raw-jsonl/lines.ts) with no limit; the jsonl sink's copy
 * (sinks/jsonl/copy.ts) and DuckDB's staging scan (sinks/duckdb/stage.ts, the native load's record judge) on a file,
 * with the default record size limit (they stop at it) and with none (they read the whole line: still linear); and
 * whole runs (`file` source → jsonl, duckdb, parquet sink, default limits: the native path stops at the limit and
 * the JS decoder dead-letters the line). Files are generated under the system's temp directory and removed.
 */
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { finished } from 'node:stream/promises';
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { stageRawJsonl } from '../sinks/duckdb/stage.js';
import { copyCheckedJsonl } from '../sinks/jsonl/copy.js';
import { JsonlLines } from '../sinks/raw-jsonl/lines.js';
import { DEFAULT_LIMITS } from '../src/core/limits.js';
import { checkedBytes, decode } from '../src/decode/index.js';
import { silentLogger } from '../src/engine/logger.js';
import { runPipeline } from '../src/engine/run.js';
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

/** The input from memory: the head, then `bytes` of the endless line. */
async function* endless(head: string, bytes: number): AsyncGenerator<Buffer> {
  yield Buffer.from(head);
  for (let sent = 0; sent < bytes; sent += CHUNK.length) yield CHUNK.subarray(0, Math.min(CHUNK.length, bytes - sent));
}

async function writeInput(file: string, bytes: number): Promise<void> {
  const out = createWriteStream(file);
  for await (const chunk of endless(HEADS.jsonl, bytes))
    if (!out.write(chunk)) await new Promise<void>((r) => out.once('drain', () => r()));
  await finished(out.end());
}

/** Whatever a path answers (a count, or what it threw), short, for the table. */
function outcome(v: unknown): string {
  const text = v instanceof Error ? `refused: ${v.message}` : String(v);
  return text.length > 60 ? `${text.slice(0, 57)}…` : text;
}

interface Ctx {
  bytes: number;
  file: string;
  dir: string;
}

type PathCase = (c: Ctx) => Promise<unknown>;

async function decodeAll(format: 'jsonl' | 'json' | 'csv', bytes: number): Promise<string> {
  let records = 0;
  let letters = 0;
  const opts = { format, unit: 'bench', deadLetter: () => void letters++ };
  for await (const batch of decode(endless(HEADS[format], bytes), opts)) records += batch.length;
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
  'decode-jsonl': (c) => decodeAll('jsonl', c.bytes),
  'decode-json': (c) => decodeAll('json', c.bytes),
  'decode-csv': (c) => decodeAll('csv', c.bytes),
  'checked-bytes': async (c) => {
    let out = 0;
    let letters = 0;
    const opts = { format: 'jsonl' as const, unit: 'bench', deadLetter: () => void letters++ };
    for await (const chunk of checkedBytes(endless(HEADS.jsonl, c.bytes), opts)) out += chunk.length;
    return `${out} bytes kept, ${letters} dead letter(s)`;
  },
  'raw-jsonl-lines': async (c) => {
    let lines = 0;
    const reader = new JsonlLines(Infinity, () => void lines++);
    for await (const chunk of endless(HEADS.jsonl, c.bytes)) reader.push(chunk);
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
    .strict()
    .parse();
  const sizes = argv.sizes.split(',').map(Number);
  const names = argv.only ? argv.only.split(',') : Object.keys(CASES);
  for (const n of names) if (!(n in CASES)) throw new Error(`unknown case ${n}`);
  const results = new Map<string, { mb: number; s: number; answer: string }[]>();
  const dir = await mkdtemp(path.join(os.tmpdir(), 'sluice-bench-long-lines-'));
  try {
    for (const mb of sizes) {
      const file = path.join(dir, `endless-${mb}.jsonl`);
      await writeInput(file, mb * MB);
      for (const name of names) {
        const started = performance.now();
        const answer = outcome(await CASES[name]!({ bytes: mb * MB, file, dir }).catch((e: unknown) => e));
        const s = (performance.now() - started) / 1000;
        results.set(name, [...(results.get(name) ?? []), { mb, s, answer }]);
        process.stderr.write(`${name} ${mb} MB: ${s.toFixed(2)} s\n`);
      }
      await rm(file, { force: true });
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  const rows = [['path', 'MB', 's', 'MB/s', 'answer']];
  for (const [name, runs] of results)
    for (const r of runs) rows.push([name, String(r.mb), r.s.toFixed(2), (r.mb / r.s).toFixed(0), r.answer]);
  console.log(formatTable(rows));
  const first = sizes[0]!;
  const last = sizes[sizes.length - 1]!;
  console.log(
    `\ntime at ${last} MB over time at ${first} MB (linear: ${(last / first).toFixed(1)}×; quadratic: ${((last / first) ** 2).toFixed(0)}×)`,
  );
  for (const [name, runs] of results) {
    const a = runs.find((r) => r.mb === first)!;
    const b = runs.find((r) => r.mb === last)!;
    console.log(`  ${name}: ${(b.s / a.s).toFixed(1)}×`);
  }
}

await main();
