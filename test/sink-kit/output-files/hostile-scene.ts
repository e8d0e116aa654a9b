/**
 * An output someone else tampered with, for the tests of test/sink-kit/output-files/hostile-files*.test.ts: a file
 * source loaded by the real CLI (in process) into a JSONL output, local or on the test's S3-compatible server, with
 * files outside it that sluice must never touch; then a commit marker or a manifest made to name them.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'vitest';
import { runCli } from '../../../src/cli/cli.js';
import { memoryIo } from '../../cli/memory-io.js';
import type { S3TestServer } from '../../support/s3-server.js';

export const SECRET = 'keep me: not sluice’s to touch\n';
const BUCKET = 'hostile';

export interface CliResult {
  code: number;
  out: string;
  err: string;
}

export async function cli(...args: string[]): Promise<CliResult> {
  const io = memoryIo({});
  const code = await runCli(args, io);
  return { code, out: io.stdout.join('\n'), err: io.stderr.join('\n') };
}

/** The commands that open an output, as a user types them. */
export const COMMANDS: Record<string, (file: string) => string[]> = {
  run: (f) => ['run', f, '--no-progress', '--quiet'],
  'state drop': (f) => ['state', 'drop', f, '--sink', '1', '--yes'],
  compact: (f) => ['compact', f],
  'dead-letters --replay': (f) => ['dead-letters', f, '--replay'],
  finalize: (f) => ['finalize', f],
};

export interface Scene {
  dir: string;
  file: string;
  /** The output's directory, or its `s3://` URL (ending in `/`). */
  root: string;
  /** The shard whose files the tampering goes into (`finalize` reads only the shards'). */
  shard?: string;
  /** Where the marker `name` is written, as the error names it. */
  markerAt(name: string): string;
  writeMarker(name: string, content: unknown): Promise<void>;
  /** The manifest's path or URL. */
  manifestAt: string;
  editManifest(edit: (m: { units: Record<string, { files: string[] }> }) => void): Promise<void>;
  /** A data file the manifest records (a marker's commit must name one to be completed on open). */
  committedFile(): Promise<string>;
  /** Data files a glob reader finds. */
  dataFiles(): Promise<string[]>;
  /** What the files outside hold now (undefined: gone). */
  outside(): Promise<Record<string, string | undefined>>;
}

let scenes = 0;
const dirs: string[] = [];

export function removeScenes(): void {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
}

/**
 * Two input files (four records, one of them broken: a dead letter to replay) loaded into a JSONL output whose tiny
 * target makes each unit a small file (so `compact` has work); sharded (`sluice prepare --shards 2`, both shards
 * run: `finalize` has a complete set) when `sharded`.
 */
export async function scene(opts: {
  s3?: S3TestServer;
  sharded?: boolean;
  write?: 'append' | 'replace';
}): Promise<Scene> {
  const dir = mkdtempSync(path.join(tmpdir(), 'sluice-hostile-'));
  dirs.push(dir);
  mkdirSync(path.join(dir, 'in'));
  writeFileSync(path.join(dir, 'in', 'a.jsonl'), '{"id":1}\n{"id":2}\n');
  writeFileSync(path.join(dir, 'in', 'b.jsonl'), '{"id":3}\n{"id":4\n');
  for (const f of ['victim.txt', 'victim2.txt']) writeFileSync(path.join(dir, f), SECRET);
  mkdirSync(path.join(dir, 'victimdir'));
  writeFileSync(path.join(dir, 'victimdir', 'keep.txt'), SECRET);
  mkdirSync(path.join(dir, 'emptydir'));
  const s3 = opts.s3;
  const prefix = `p${++scenes}/`;
  const root = s3 ? `s3://${BUCKET}/${prefix}` : path.join(dir, 'out');
  if (s3) {
    if (!(await s3.keys(BUCKET).catch(() => undefined))) await s3.createBucket(BUCKET);
    for (const k of ['victim.txt', 'victim2.txt', `${prefix.slice(0, -1)}-other/keep.txt`]) await putObject(s3, k);
  }
  const sink = {
    type: 'jsonl',
    path: s3 ? root : 'out',
    target_file_mb: 0.0001,
    write: opts.write ?? 'append',
    ...(s3 && { s3: { endpoint: s3.endpoint, force_path_style: true } }),
  };
  const file = path.join(dir, 'p.yaml');
  writeFileSync(
    file,
    JSON.stringify({
      version: 1,
      name: 'hostile',
      source: { type: 'file', paths: ['in'], format: 'jsonl', concurrency: 1 },
      sinks: [sink],
    }),
  );
  const text = async (rel: string): Promise<string | undefined> => {
    if (!s3) return existsSync(path.join(root, rel)) ? readFileSync(path.join(root, rel), 'utf8') : undefined;
    return (await s3.keys(BUCKET, prefix)).includes(`${prefix}${rel}`)
      ? (await s3.get(BUCKET, `${prefix}${rel}`)).toString('utf8')
      : undefined;
  };
  let shard: string | undefined;
  if (opts.sharded) {
    expect((await cli('prepare', file, '--shards', '2')).code).toBe(0);
    for (const s of ['0/2', '1/2']) {
      const r = await cli('run', file, '--shard', s, '--no-progress', '--quiet');
      expect(r.code, r.err).toBe(0);
    }
    // The shard that got a file with rows (which shard gets which unit is not fixed).
    for (const tag of ['shard-0-of-2', 'shard-1-of-2']) {
      const m = await text(`_sluice_manifest.${tag}.json`);
      if (m && /"files": \[\s*"/.test(m)) shard ??= tag;
    }
    expect(shard).toBeDefined();
  } else {
    const r = await cli(...COMMANDS.run!(file));
    expect(r.code, r.err).toBe(0);
  }
  const tmpArea = `.sluice-tmp/${shard ? `${shard}/` : ''}`;
  const manifest = `_sluice_manifest${shard ? `.${shard}` : ''}.json`;
  const local = (rel: string): string => path.join(root, rel);
  return {
    dir,
    file,
    root,
    ...(shard && { shard }),
    markerAt: (name) => (s3 ? `${root}${tmpArea}${name}` : local(`${tmpArea}${name}`)),
    async writeMarker(name, content) {
      if (s3) return putObject(s3, `${prefix}${tmpArea}${name}`, JSON.stringify(content));
      mkdirSync(local(tmpArea), { recursive: true });
      writeFileSync(local(`${tmpArea}${name}`), JSON.stringify(content));
    },
    manifestAt: s3 ? `${root}${manifest}` : local(manifest),
    async committedFile() {
      const m = JSON.parse((await text(manifest))!) as { units: Record<string, { files: string[] }> };
      return Object.values(m.units).flatMap((u) => u.files)[0]!;
    },
    async editManifest(edit) {
      const m = JSON.parse((await text(manifest))!) as { units: Record<string, { files: string[] }> };
      edit(m);
      if (s3) await putObject(s3, `${prefix}${manifest}`, JSON.stringify(m));
      else writeFileSync(local(manifest), JSON.stringify(m));
    },
    async dataFiles() {
      if (s3)
        return (await s3.keys(BUCKET, prefix)).filter((k) => k.endsWith('.jsonl')).map((k) => k.slice(prefix.length));
      return (readdirSync(root, { recursive: true }) as string[]).filter((f) => f.endsWith('.jsonl'));
    },
    async outside() {
      const read = (f: string): string | undefined => (existsSync(f) ? readFileSync(f, 'utf8') : undefined);
      const found: Record<string, string | undefined> = {
        'victim.txt': read(path.join(dir, 'victim.txt')),
        'victim2.txt': read(path.join(dir, 'victim2.txt')),
        'victimdir/keep.txt': read(path.join(dir, 'victimdir', 'keep.txt')),
        'emptydir/': existsSync(path.join(dir, 'emptydir')) ? '' : undefined,
      };
      if (s3) {
        const keys = new Set(await s3.keys(BUCKET));
        for (const k of ['victim.txt', 'victim2.txt', `${prefix.slice(0, -1)}-other/keep.txt`])
          found[`s3:${k}`] = keys.has(k) ? (await s3.get(BUCKET, k)).toString('utf8') : undefined;
      }
      return found;
    },
  };
}

async function putObject(s3: S3TestServer, key: string, body = SECRET): Promise<void> {
  const { PutObjectCommand } = await import('@aws-sdk/client-s3');
  await s3.client.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: body }));
}

/** Everything outside as the scene made it. */
export function untouched(s: Scene, found: Record<string, string | undefined>): void {
  for (const [what, content] of Object.entries(found))
    expect(content, `${what} outside ${s.root}`).toBe(what === 'emptydir/' ? '' : SECRET);
}

/** A command refused with exit 2, its message naming `file`, and nothing outside touched. */
export async function expectRefused(s: Scene, r: CliResult, file: string): Promise<void> {
  untouched(s, await s.outside());
  // No data file was made outside the output either.
  expect(readdirSync(s.dir).filter((f) => f.endsWith('.jsonl'))).toEqual([]);
  expect(r.code, r.err).toBe(2);
  expect(r.err).toContain(file);
  expect(r.err).toMatch(/refused, nothing was touched/);
  expect(r.err).not.toMatch(/not an error sluice expected/);
}
