import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { lazyPackage } from '../../src/core/lazy-package.js';

const ROOT = path.resolve(fileURLToPath(import.meta.url), '../../..');
const DRIVERS = ['@aws-sdk/client-s3', '@clickhouse/client', 'pg', 'pg-copy-streams'];

/** The driver packages a fresh node process holds after importing `module` of the compiled CLI (dist/). */
async function driversLoadedBy(module: string, then = ''): Promise<string[]> {
  const script = `
    import { createRequire } from 'node:module';
    await import(${JSON.stringify(path.join(ROOT, 'dist', module))});
    ${then}
    const loaded = Object.keys(createRequire(import.meta.url).cache);
    const drivers = ${JSON.stringify(DRIVERS)};
    console.log(JSON.stringify(drivers.filter((d) => loaded.some((f) => f.includes('/node_modules/' + d + '/')))));`;
  const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT });
  return JSON.parse(stdout) as string[];
}

describe('lazyPackage', () => {
  it('gives the exports an import of the package gives: one copy of the driver', async () => {
    const pg = lazyPackage<typeof import('pg')>('pg');
    expect(pg().Client).toBe((await import('pg')).default.Client);
    expect(pg()).toBe(pg());
  });

  it('a run loads the registry of every sink without its drivers; a sink loads its own when it connects', async () => {
    expect(await driversLoadedBy('src/operations/run.js')).toEqual([]);
    // Proves the probe sees a driver once it is loaded.
    const connect = `(await import(${JSON.stringify(path.join(ROOT, 'dist/sinks/postgres/connection.js'))})).resolveTarget('postgres://u@h/d');`;
    expect(await driversLoadedBy('src/operations/run.js', connect)).toEqual(['pg']);
  });
});
