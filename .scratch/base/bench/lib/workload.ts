/**
 * The benchmark workload: company profiles from the emulator's own generator, rendered by the emulator's own
 * renderer (so the bytes are what a snapshot download delivers), gzip level 6 like the service's files:
 *
 *   companies.jsonl.gz   all records in one file (the floors read this)
 *   parts/               the same records in service-like parts of `PART_RECORDS` (a snapshot's parts; one work
 *                        unit each for sluice's pipelines)
 *   companies.json.gz    one JSON array (an element per line, as the service writes arrays)
 *   companies.csv.gz     the service's CSV: header of the dataset's fields, nested values as JSON text
 *
 * Generated once per (records, generator) under bench/.work/ (gitignored): the directory name carries a hash of
 * the generator's source, so a changed generator makes a new workload instead of a stale one. Each artifact is
 * written to a temporary name and renamed when complete, so an interrupted run never leaves a short file behind.
 */
import { createHash } from 'node:crypto';
import { createWriteStream, existsSync } from 'node:fs';
import { mkdir, readFile, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import { createGzip } from 'node:zlib';
import { companyProfileFields, companyProfiles } from '../../src/emulator/data/company-profiles.js';
import { renderRecords, type SnapshotFormat } from '../../src/emulator/datasets/render.js';

export const PART_RECORDS = 10_000;
const SEED = 1;
const GZIP_LEVEL = 6;
/** Bump when the layout of a workload directory changes. */
const LAYOUT_VERSION = 1;
/** The sources whose change changes the bytes. */
const GENERATOR_SOURCES = [
  'src/emulator/data/company-profiles.ts',
  'src/emulator/data/dataset-vocab.ts',
  'src/emulator/data/record-rng.ts',
  'src/emulator/datasets/render.ts',
];

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const WORK_DIR = path.join(ROOT, 'bench', '.work');

export type Artifact = 'jsonl' | 'parts' | 'json' | 'csv';

export interface Workload {
  records: number;
  dir: string;
  /** Bytes of the records as uncompressed JSONL: the unit of every MB/s figure. */
  jsonlBytes: number;
  jsonlGz: string;
  partsDir: string;
  jsonGz: string;
  csvGz: string;
}

/** The workload of `records` records with (at least) `artifacts` present, generating what is missing. */
export async function prepareWorkload(
  records: number,
  artifacts: readonly Artifact[],
  log: (line: string) => void = () => undefined,
): Promise<Workload> {
  const dir = path.join(WORK_DIR, `workload-${records}-${await generatorHash()}`);
  await mkdir(dir, { recursive: true });
  const w: Workload = {
    records,
    dir,
    jsonlBytes: 0,
    jsonlGz: path.join(dir, 'companies.jsonl.gz'),
    partsDir: path.join(dir, 'parts'),
    jsonGz: path.join(dir, 'companies.json.gz'),
    csvGz: path.join(dir, 'companies.csv.gz'),
  };
  const missing = artifacts.filter((a) => !existsSync(artifactPath(w, a)));
  if (missing.length > 0) {
    log(`generating ${records.toLocaleString('en')} records (${missing.join(', ')}) into ${path.relative(ROOT, dir)}`);
    const t0 = performance.now();
    // gzip runs on libuv's threads: the artifacts compress in parallel while the main thread renders.
    await Promise.all(missing.map((a) => writeArtifact(w, a)));
    log(`  generated in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  }
  w.jsonlBytes = await jsonlBytes(dir, records);
  return w;
}

function artifactPath(w: Workload, a: Artifact): string {
  return { jsonl: w.jsonlGz, parts: w.partsDir, json: w.jsonGz, csv: w.csvGz }[a];
}

/** The part files of the workload, in order. */
export async function partFiles(w: Workload): Promise<string[]> {
  return (await readdir(w.partsDir)).sort().map((f) => path.join(w.partsDir, f));
}

async function writeArtifact(w: Workload, a: Artifact): Promise<void> {
  const target = artifactPath(w, a);
  const tmp = `${target}.tmp-${process.pid}`;
  if (a === 'parts') {
    await rm(tmp, { recursive: true, force: true });
    await mkdir(tmp);
    for (let from = 0, k = 0; from < w.records; from += PART_RECORDS, k++) {
      const name = `part-${String(k).padStart(5, '0')}.jsonl.gz`;
      await writeGzip(path.join(tmp, name), 'jsonl', from, Math.min(w.records, from + PART_RECORDS));
    }
  } else await writeGzip(tmp, a, 0, w.records);
  await rename(tmp, target);
}

async function writeGzip(file: string, format: SnapshotFormat, from: number, to: number): Promise<void> {
  const columns = Object.keys(companyProfileFields);
  const body = Readable.from(renderRecords(companyProfiles(SEED, from, to), format, columns));
  await pipeline(body, createGzip({ level: GZIP_LEVEL, chunkSize: 1 << 16 }), createWriteStream(file));
}

/** Uncompressed JSONL size, measured once (rendering without gzip is quick) and kept beside the data. */
async function jsonlBytes(dir: string, records: number): Promise<number> {
  const file = path.join(dir, 'jsonl-bytes.txt');
  if (existsSync(file)) return Number(await readFile(file, 'utf8'));
  let bytes = 0;
  const columns = Object.keys(companyProfileFields);
  for (const chunk of renderRecords(companyProfiles(SEED, 0, records), 'jsonl', columns)) bytes += chunk.length;
  await writeFile(file, String(bytes));
  return bytes;
}

async function generatorHash(): Promise<string> {
  const h = createHash('sha1').update(`layout ${LAYOUT_VERSION} seed ${SEED} gzip ${GZIP_LEVEL} part ${PART_RECORDS}`);
  for (const f of GENERATOR_SOURCES) h.update(await readFile(path.join(ROOT, f)));
  return h.digest('hex').slice(0, 10);
}

/** Total size of a file or of the files below a directory. */
export async function sizeOf(p: string): Promise<number> {
  const st = await stat(p);
  if (!st.isDirectory()) return st.size;
  let bytes = 0;
  for (const e of await readdir(p)) bytes += await sizeOf(path.join(p, e));
  return bytes;
}
