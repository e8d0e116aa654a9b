/**
 * The Dockerfile's steps, proven without Docker (CI only: SLUICE_PACKAGE=full, as .ci/run sets it; it takes a minute
 * and needs the npm registry). The build stage: the files its COPY lines name, in an empty directory, packed with
 * `npm pack` (whose prepack compiles them). The runtime stage: the tarball unpacked into another empty directory with
 * the lockfile, `npm ci --omit=dev --ignore-scripts`, the CLI linked onto PATH as `sluice`. Then, from a third
 * directory that holds only a copy of the example pipelines (what `docker run -v "$PWD:/work"` mounts), `sluice run`
 * an example against the emulator: the compiled CLI, its production dependencies (DuckDB's native binding included)
 * and nothing of the repository. The fast checks that keep the Dockerfile, the recipes and package.json in step run in
 * every `npm test`: test/deploy/recipes.test.ts.
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
  symlinkSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startEmulator } from '../../src/emulator/server.js';

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
