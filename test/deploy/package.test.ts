/**
 * The Dockerfile's steps, proven without Docker (CI only: SLUICE_PACKAGE=full, as .ci/run sets it; it takes a minute
 * and needs the npm registry). The build stage: the files its COPY lines name, in an empty directory, packed with
 * `npm pack` (whose prepack compiles them). The runtime stage: the tarball unpacked into another empty directory with
 * the lockfile, `npm ci --omit=dev --ignore-scripts`, the CLI linked onto PATH as `sluice`. Then, from a third
 * directory that holds only a copy of the example pipelines (what `docker run -v "$PWD:/work"` mounts), `sluice run`
 * an example against the emulator: the compiled CLI, its production dependencies (DuckDB's native binding included)
 * and nothing of the repository. The fast checks that keep the Dockerfile, the recipes and package.json in step run in
 * every `npm test`: test/deploy/recipes.test.ts.
 *
 * Also in every `npm test` (a second, no network): the tarball's exact file list (`npm pack --dry-run`), from a copy of
 * the tree with what a user's checkout holds beside the examples planted in it — `pipelines/.env` (which `sluice
 * init`'s `.env.example` says to create), outputs, run state, dead letters: package.json's `files` is an allowlist,
 * and none of them may reach the package or the image.
 */
import { spawn, spawnSync, type SpawnSyncOptions } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startEmulator } from '../../src/emulator/server.js';
import { loadPipeline } from '../../src/pipeline/load.js';
import { referencedFiles } from '../../src/pipeline/referenced-files.js';

const FULL = process.env.SLUICE_PACKAGE === 'full';
const ROOT = path.resolve(import.meta.dirname, '../..');
const KEY = 'package-test-key-41c7';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function sh(command: string, args: string[], opts: SpawnSyncOptions): string {
  const r = spawnSync(command, args, { encoding: 'utf8', ...opts });
  if (r.status !== 0) throw new Error(`${command} ${args.join(' ')} exited ${r.status}:\n${String(r.stderr)}`);
  return String(r.stdout);
}

/** The paths the Dockerfile's build stage copies from the context, in order. */
function buildStageCopies(): string[] {
  const dockerfile = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
  const build = dockerfile.slice(
    dockerfile.indexOf(' AS build'),
    dockerfile.indexOf('\nFROM ', dockerfile.indexOf(' AS build')),
  );
  return [...build.matchAll(/^COPY (.+)$/gm)].flatMap((m) => m[1]!.split(/\s+/).slice(0, -1));
}

describe('the image, built without Docker (SLUICE_PACKAGE=full)', () => {
  it.runIf(FULL)(
    'packs, installs the tarball with production dependencies only, and runs an example pipeline from there',
    async () => {
      const dir = mkdtempSync(path.join(tmpdir(), 'sluice-package-'));
      dirs.push(dir);
      const [build, app, bin, work] = ['build', 'app', 'bin', 'work'].map((d) => path.join(dir, d)) as [
        string,
        string,
        string,
        string,
      ];
      for (const d of [build, app, bin, work]) mkdirSync(d);

      // Build stage: what the Dockerfile copies, and every dependency (the repository's own install of the same
      // lockfile stands in for its `npm ci`), then `npm pack`.
      const copies = buildStageCopies();
      expect(copies).toEqual(expect.arrayContaining(['package.json', 'package-lock.json', 'src', 'sinks', 'bin']));
      for (const c of copies)
        cpSync(path.join(ROOT, c), path.join(build, c), {
          recursive: true,
          filter: (src) => !/(^|\/)\.sluice$|\.duckdb(\.wal)?$/.test(src),
        });
      symlinkSync(path.join(ROOT, 'node_modules'), path.join(build, 'node_modules'));
      sh('npm', ['pack', '--pack-destination', dir, '--silent'], { cwd: build });
      const tarball = readdirSync(dir).find((f) => f.endsWith('.tgz'));
      expect(tarball).toBeDefined();

      // Runtime stage: the tarball and the lockfile, production dependencies only, scripts off, `sluice` on PATH.
      sh('tar', ['-xzf', path.join(dir, tarball!), '-C', app, '--strip-components=1'], {});
      cpSync(path.join(ROOT, 'package-lock.json'), path.join(app, 'package-lock.json'));
      sh('npm', ['ci', '--omit=dev', '--ignore-scripts', '--no-audit', '--no-fund'], { cwd: app });
      chmodSync(path.join(app, 'bin/sluice.js'), 0o755);
      symlinkSync(path.join(app, 'bin/sluice.js'), path.join(bin, 'sluice'));

      const installed = readdirSync(path.join(app, 'node_modules'));
      expect(installed).toEqual(expect.arrayContaining(['@duckdb', 'yargs', 'zod', 'pg', 'undici']));
      for (const dev of ['typescript', 'vitest', 'tsx', 'eslint', 'prettier', 's3rver'])
        expect(installed).not.toContain(dev);
      expect(existsSync(path.join(app, 'src'))).toBe(false);
      expect(existsSync(path.join(app, 'dist/src/cli/main.js'))).toBe(true);

      const env = {
        PATH: `${bin}:${path.dirname(process.execPath)}:/usr/bin:/bin`,
        NODE_ENV: 'production',
        HOME: work,
      };
      const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };
      expect(sh('sluice', ['--version'], { cwd: work, env }).trim()).toBe(pkg.version);

      // `docker run -v "$PWD:/work" sluice:<version> run pipelines/company_profiles.yaml`, against the emulator.
      cpSync(path.join(app, 'pipelines'), path.join(work, 'pipelines'), { recursive: true });
      const emu = await startEmulator({ apiKey: KEY, size: 3000, timeScale: 500 });
      try {
        // Spawned, not spawnSync: the emulator answers on this process's event loop.
        const child = spawn('sluice', ['run', 'pipelines/company_profiles.yaml', '--no-progress', '--show', '1'], {
          cwd: work,
          env: { ...env, SLUICE_BASE_URL: emu.url, SLUICE_API_KEY: KEY },
        });
        let stdout = '';
        let stderr = '';
        child.stdout.setEncoding('utf8').on('data', (s: string) => (stdout += s));
        child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
        const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
        expect(code, stderr).toBe(0);
        expect(stdout).toMatch(/^done: company_profiles_nightly$/m);
        const records = Number(/^ {2}records\s+([\d,]+)$/m.exec(stdout)?.[1]?.replace(/,/g, ''));
        expect(records).toBeGreaterThan(100);
        expect(stdout).toMatch(/== duckdb out\/warehouse\.duckdb table company_profiles: first 1 row\n\{"/);
      } finally {
        await emu.close();
      }
    },
    600_000,
  );
});

/** What a user's checkout holds beside the examples after using them, none of which may be packed. */
const PLANTED = [
  'pipelines/.env',
  'pipelines/.env.local',
  'pipelines/out/x.parquet',
  'pipelines/out/warehouse.duckdb',
  'pipelines/out/companies/part-0001.jsonl',
  'pipelines/.sluice/company_profiles_nightly/state.json',
  'pipelines/.sluice/company_profiles_nightly/dead-letters.jsonl',
  'pipelines/.sluice/company_profiles_nightly/emulator.json',
  'pipelines/.sluice/stray.yaml',
  'pipelines/dead-letters.jsonl',
  'pipelines/data/dead-letters.jsonl',
  'pipelines/data/private-export.jsonl',
  'pipelines/filters/customers.csv',
  'pipelines/report.html',
  'config/.env',
  'bin/.env',
  'dist/.tsbuildinfo',
  'dist/src/cli/main.js.4242.tmp',
  '.env',
];

/** Every file under `dir`, relative to `root`. */
function filesIn(root: string, dir: string): string[] {
  return readdirSync(path.join(root, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile())
    .map((e) => path.relative(root, path.join(e.parentPath, e.name)));
}

describe('the package, by allowlist', () => {
  it('npm pack lists exactly the CLI, its config and the example pipelines with the files they read: no .env, output, state or dead letter', async () => {
    const tree = mkdtempSync(path.join(tmpdir(), 'sluice-pack-'));
    dirs.push(tree);
    for (const p of ['package.json', 'README.md', 'bin', 'config', 'pipelines', 'dist/src', 'dist/sinks'])
      cpSync(path.join(ROOT, p), path.join(tree, p), {
        recursive: true,
        // This checkout's own leftovers are not the test's: the planted ones are.
        filter: (src) => !/\/pipelines\/(\.sluice|out)$|\.(tmp|duckdb|duckdb\.wal)$|\/\.env[^/]*$/.test(src),
      });
    for (const f of PLANTED) {
      mkdirSync(path.dirname(path.join(tree, f)), { recursive: true });
      writeFileSync(path.join(tree, f), f.includes('.env') ? 'SLUICE_API_KEY=planted-secret-3f9a\n' : 'planted\n');
    }

    const r = spawnSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: tree, encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    const packed = (JSON.parse(r.stdout) as [{ files: { path: string }[] }])[0].files.map((f) => f.path).sort();

    expect(packed.filter((f) => PLANTED.includes(f))).toEqual([]);
    // What the example pipelines read beside them (sources' file options: filter values, queries, input files).
    const examples = readdirSync(path.join(tree, 'pipelines')).filter((f) => f.endsWith('.yaml'));
    expect(examples.length).toBeGreaterThan(3);
    const env = { DATABASE_URL: 'postgres://u@127.0.0.1:9/db' };
    const read = new Set<string>();
    for (const example of examples) {
      const { config, baseDir } = await loadPipeline(path.join(tree, 'pipelines', example), env);
      for (const file of referencedFiles(config, baseDir)) {
        const rel = path.relative(tree, file);
        expect(rel, `${example} reads ${rel}, outside pipelines/`).toMatch(/^pipelines\//);
        // A directory of input files: what it holds.
        for (const f of statSync(file).isDirectory() ? filesIn(tree, rel) : [rel]) read.add(f);
      }
    }
    expect(read.size).toBeGreaterThan(0);
    const dist = [...filesIn(tree, 'dist/src'), ...filesIn(tree, 'dist/sinks')].filter((f) => f.endsWith('.js'));
    expect(dist).toContain('dist/src/cli/main.js');
    expect(packed).toEqual(
      [
        'package.json',
        'README.md',
        'bin/sluice.js',
        'config/pipeline.schema.json',
        ...dist,
        ...examples.map((e) => `pipelines/${e}`),
        ...read,
      ].sort(),
    );
  });
});
