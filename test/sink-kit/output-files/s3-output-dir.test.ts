/**
 * OutputDir on a real S3-compatible server (s3rver on loopback): the commit protocol with objects. A listing reader
 * sees a data object only once the manifest lists it; a crash before the manifest leaves temp objects only, removed
 * on the next open; a crash after it is rolled forward on the next open; `replace` switches through the pointer.
 */
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SluiceError } from '../../../src/core/errors.js';
import { OutputDir, outputLockPath, type OutputDirOptions } from '../../../src/sink-kit/output-files/output-dir.js';
import { parseS3Url } from '../../../src/sink-kit/output-files/s3.js';
import { startS3Server, type S3TestServer } from '../../support/s3-server.js';
import { removeTempDirs, sinkContext, tempDir } from '../../sinks/helpers.js';
import { armed, failWith } from '../../support/failpoints.js';

let s3: S3TestServer;
const BUCKET = 'outputs';
let n = 0;

beforeAll(async () => {
  s3 = await startS3Server();
  await s3.createBucket(BUCKET);
});
afterAll(async () => {
  await s3?.stop();
  await removeTempDirs();
});

async function options(over: Partial<OutputDirOptions> = {}): Promise<OutputDirOptions> {
  return {
    root: `s3://${BUCKET}/t${++n}/data/`,
    s3: { endpoint: s3.endpoint, region: 'us-east-1', force_path_style: true },
    mode: 'append',
    fresh: false,
    pipeline: 'p',
    format: 'jsonl',
    label: 'test sink',
    log: sinkContext(await tempDir()).log,
    ...over,
  };
}

/** Commits unit `id` with one file `<id>.jsonl`. */
async function commitUnit(out: OutputDir, id: string): Promise<void> {
  const tmp = out.tempPath(id);
  await writeFile(tmp, `{"id":"${id}"}\n`);
  await out.commit({
    moves: [{ from: tmp, to: `${id}.jsonl` }],
    apply: (m) => void (m.units[id] = { records: 1, files: [`${id}.jsonl`], committed_at: '' }),
  });
}

const prefixOf = (o: OutputDirOptions): string => parseS3Url(o.root).prefix;
const dataKeys = async (o: OutputDirOptions): Promise<string[]> =>
  (await s3.keys(BUCKET, prefixOf(o))).filter((k) => k.endsWith('.jsonl'));

describe('OutputDir on S3', () => {
  it('commits through the manifest object and copies the file to its final key, leaving no temp object', async () => {
    const o = await options();
    const out = await OutputDir.open(o);
    await commitUnit(out, 'a');
    const p = prefixOf(o);
    expect(await s3.keys(BUCKET, p)).toEqual([`${p}_sluice_manifest.json`, `${p}a.jsonl`]);
    expect((await s3.get(BUCKET, `${p}a.jsonl`)).toString()).toBe('{"id":"a"}\n');
    const again = await OutputDir.open(o);
    expect(again.committedUnits()).toEqual(new Set(['a']));
    expect(outputLockPath(o.root, 'append')).not.toContain('s3:');
  });

  it('a crash before the manifest leaves only temp objects, which the next open removes', async () => {
    const o = await options();
    const out = await OutputDir.open(o);
    const disarm = armed('files:before-manifest', failWith('crash'));
    await expect(commitUnit(out, 'b')).rejects.toThrow('crash');
    disarm();
    const p = prefixOf(o);
    const left = await s3.keys(BUCKET, p);
    expect(left.length).toBeGreaterThan(0);
    expect(left.every((k) => k.startsWith(`${p}.sluice-tmp/`))).toBe(true);
    expect(await dataKeys(o)).toEqual([]);
    const again = await OutputDir.open(o);
    expect(again.committedUnits()).toEqual(new Set());
    expect(await s3.keys(BUCKET, p)).toEqual([]);
  });

  it('a crash after the manifest leaves the object unlisted until the next open rolls the commit forward', async () => {
    const o = await options();
    const out = await OutputDir.open(o);
    const disarm = armed('files:after-manifest', failWith('crash'));
    await expect(commitUnit(out, 'c')).rejects.toThrow('crash');
    disarm();
    expect(await dataKeys(o)).toEqual([]);
    const again = await OutputDir.open(o);
    expect(again.committedUnits()).toEqual(new Set(['c']));
    const p = prefixOf(o);
    expect(await s3.keys(BUCKET, p)).toEqual([`${p}_sluice_manifest.json`, `${p}c.jsonl`]);
  });

  it('replace writes a generation and switches the pointer in finish(); the old generation is deleted', async () => {
    const o = await options({ mode: 'replace', fresh: true });
    const p = prefixOf(o);
    const first = await OutputDir.open(o);
    await commitUnit(first, 'old');
    await first.finish();
    const pointer1 = JSON.parse((await s3.get(BUCKET, `${p}_sluice_current.json`)).toString()) as {
      generation: string;
      manifest: string;
    };
    const second = await OutputDir.open(o);
    await commitUnit(second, 'new');
    // Not switched yet: the pointer still names the first generation.
    const before = JSON.parse((await s3.get(BUCKET, `${p}_sluice_current.json`)).toString()) as typeof pointer1;
    expect(before.generation).toBe(pointer1.generation);
    await second.finish();
    const after = JSON.parse((await s3.get(BUCKET, `${p}_sluice_current.json`)).toString()) as typeof pointer1;
    expect(after.generation).not.toBe(pointer1.generation);
    const manifest = JSON.parse((await s3.get(BUCKET, `${p}${after.manifest}`)).toString()) as {
      units: Record<string, unknown>;
    };
    expect(Object.keys(manifest.units)).toEqual(['new']);
    expect(await dataKeys(o)).toEqual([`${p}.sluice-generations/${after.generation}/new.jsonl`]);
  });
});

describe('OutputDir on S3: sluice state drop', () => {
  it('append: the manifest first, then the objects it lists; the next open finds nothing committed', async () => {
    const o = await options();
    const p = prefixOf(o);
    const out = await OutputDir.open(o);
    await commitUnit(out, 'a');
    await commitUnit(out, 'b');
    expect(await out.drop()).toEqual([`2 object(s) in ${o.root}`, 'its manifest _sluice_manifest.json']);
    expect(await s3.keys(BUCKET, p)).toEqual([]);
    expect((await OutputDir.open(o)).committedUnits()).toEqual(new Set());
  });

  it('replace: the pointer first, then the live generation and the one a run had begun', async () => {
    const o = await options({ mode: 'replace', fresh: true });
    const p = prefixOf(o);
    const first = await OutputDir.open(o);
    await commitUnit(first, 'a');
    await first.finish();
    // As `sluice state drop` opens the output: as a run does, which begins (or continues) the next generation.
    const out = await OutputDir.open({ ...o, fresh: false });
    expect(await s3.keys(BUCKET, `${p}.sluice-generations/`)).toContain(`${p}.sluice-generations/NEXT`);
    expect(await out.drop()).toEqual([
      expect.stringMatching(/^the live generation gen-\S+ of s3:\/\/outputs\/t\d+\/data\/ \(2 object\(s\)\)$/),
      'its pointer _sluice_current.json',
    ]);
    expect(await s3.keys(BUCKET, p)).toEqual([]);
    // The next run writes a generation of its own and switches the pointer to it.
    const next = await OutputDir.open({ ...o, fresh: false });
    expect(next.committedUnits()).toEqual(new Set());
    await commitUnit(next, 'c');
    await next.finish();
    expect(await dataKeys(o)).toEqual([expect.stringMatching(/\.sluice-generations\/gen-[^/]+\/c\.jsonl$/)]);
  });
});

describe('OutputDir on S3: shards in one prefix', () => {
  it('shards commit side by side into one prefix, each to its own manifest; one shard’s open leaves the other’s temp objects', async () => {
    const base = await options();
    const p = prefixOf(base);
    const shard = (index: number, over: Partial<OutputDirOptions> = {}) => ({
      ...base,
      shard: { index, count: 2 },
      ...over,
    });
    const a = await OutputDir.open(shard(0));
    const b = await OutputDir.open(shard(1));
    await commitUnit(b, 'b1');
    // Shard 0's commit is cut off before its manifest: its temp objects are under its own temp prefix.
    const disarm = armed('files:before-manifest', failWith('crash'));
    await expect(commitUnit(a, 'a1')).rejects.toThrow('crash');
    disarm();
    const tmpOf0 = (await s3.keys(BUCKET, p)).filter((k) => k.startsWith(`${p}.sluice-tmp/`));
    expect(tmpOf0.length).toBeGreaterThan(0);
    expect(tmpOf0.every((k) => k.startsWith(`${p}.sluice-tmp/shard-0-of-2/`))).toBe(true);
    // Shard 1 opening again, and an unsharded open, leave them: they may be a live shard's.
    await OutputDir.open(shard(1));
    await OutputDir.open(base);
    expect((await s3.keys(BUCKET, p)).filter((k) => k.startsWith(`${p}.sluice-tmp/`))).toEqual(tmpOf0);

    const a2 = await OutputDir.open(shard(0));
    await commitUnit(a2, 'a2');
    expect(await s3.keys(BUCKET, p)).toEqual([
      `${p}_sluice_manifest.shard-0-of-2.json`,
      `${p}_sluice_manifest.shard-1-of-2.json`,
      `${p}a2.jsonl`,
      `${p}b1.jsonl`,
    ]);
    expect(a2.committedUnits()).toEqual(new Set(['a2']));
    expect(outputLockPath(base.root, 'append', { index: 0, count: 2 })).not.toBe(
      outputLockPath(base.root, 'append', { index: 1, count: 2 }),
    );
  });
});

describe('OutputDir on S3: staging files', () => {
  it('uploads a staging file before the manifest refers to it, downloads it for a later run, deletes it once published', async () => {
    const o = await options({ format: 'parquet' });
    const p = prefixOf(o);
    const out = await OutputDir.open(o);
    await mkdir(out.stagedDir, { recursive: true });
    await writeFile(path.join(out.stagedDir, 'u.staged'), '{"x":1}\n');
    const staged = { file: '.sluice-staged/u.staged', bytes: 8, schema: [] };
    await out.commit({
      moves: [],
      apply: (m) => void (m.units.u = { records: 1, files: [], committed_at: '', staged }),
    });
    expect(await s3.keys(BUCKET, p)).toEqual([`${p}.sluice-staged/u.staged`, `${p}_sluice_manifest.json`]);

    // A run on another machine (no local copy) gets the staged rows back from the store.
    await rm(out.stagedDir, { recursive: true, force: true });
    const again = await OutputDir.open(o);
    expect(await readFile(path.join(again.stagedDir, 'u.staged'), 'utf8')).toBe('{"x":1}\n');

    const tmp = again.tempPath('pub');
    await writeFile(tmp, 'parquet bytes');
    await again.commit({
      moves: [{ from: tmp, to: 'part-1.parquet' }],
      apply: (m) => {
        delete m.units.u!.staged;
        m.units.u!.files = ['part-1.parquet'];
      },
    });
    expect(await s3.keys(BUCKET, p)).toEqual([`${p}_sluice_manifest.json`, `${p}part-1.parquet`]);
  });
});

describe('S3 errors', () => {
  it('refused credentials: the error says to check the credentials, and no message holds the secret', async () => {
    const secret = 'not-the-S3RVER-secret-9d2f';
    const saved = { id: process.env.AWS_ACCESS_KEY_ID, secret: process.env.AWS_SECRET_ACCESS_KEY };
    Object.assign(process.env, { AWS_ACCESS_KEY_ID: 'NOT-A-KEY', AWS_SECRET_ACCESS_KEY: secret });
    try {
      const err = (await OutputDir.open(await options()).catch((e: unknown) => e)) as SluiceError;
      expect(err).toBeInstanceOf(SluiceError);
      expect(err.hint).toContain('credentials');
      expect(`${err.message} ${err.hint} ${String(err.stack)}`).not.toContain(secret);
    } finally {
      Object.assign(process.env, { AWS_ACCESS_KEY_ID: saved.id, AWS_SECRET_ACCESS_KEY: saved.secret });
    }
  });

  it('parses s3:// URLs into bucket and prefix, and refuses one without a bucket', () => {
    expect(parseS3Url('s3://lake/companies')).toEqual({ bucket: 'lake', prefix: 'companies/' });
    expect(parseS3Url('s3://lake/a/b/')).toEqual({ bucket: 'lake', prefix: 'a/b/' });
    expect(parseS3Url('s3://lake')).toEqual({ bucket: 'lake', prefix: '' });
    expect(() => parseS3Url('s3:///x')).toThrow(SluiceError);
  });
});
