/** Why DuckDB would not open a file: another process's lock (with its pid) told apart from permission problems. */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, describe, expect, it } from 'vitest';
import { classifyOpenFailure } from '../../../sinks/duckdb/database.js';
import { removeTempDirs, tempDir } from '../helpers.js';

afterAll(removeTempDirs);

/** Another process with the database open, as a running sluice or the duckdb CLI would have it. */
async function holdOpen(file: string): Promise<{ pid: number; stop(): void }> {
  const script = `
    import { DuckDBInstance } from '@duckdb/node-api';
    const db = await DuckDBInstance.create(${JSON.stringify(file)});
    const connection = await db.connect();
    await connection.run('CREATE TABLE t (a INTEGER)');
    console.log('ready');
    // The timer holds both: an unreferenced instance is collected and closed, and its lock goes with it.
    setInterval(() => void [db, connection], 1000);`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
    cwd: path.resolve(import.meta.dirname, '../../..'),
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (b: Buffer) => b.toString().includes('ready') && resolve());
    child.once('exit', (code) => reject(new Error(`the holder exited with ${code}`)));
  });
  return { pid: child.pid!, stop: () => child.kill('SIGKILL') };
}

describe('classifyOpenFailure', () => {
  it('names the process that holds the file locked', async () => {
    const file = path.join(await tempDir(), 'held.duckdb');
    const holder = await holdOpen(file);
    try {
      const err = await DuckDBInstance.create(file).then(
        () => undefined,
        (e: unknown) => e as Error,
      );
      expect(err).toBeInstanceOf(Error);
      expect(classifyOpenFailure(err!.message)).toMatchObject({ kind: 'locked', pid: holder.pid });
    } finally {
      holder.stop();
    }
  });

  it('tells permission denied apart from a lock, even when DuckDB failed while taking the lock', () => {
    expect(classifyOpenFailure('IO Error: Cannot open file "/x/w.duckdb": Permission denied')).toEqual({
      kind: 'permission',
    });
    expect(classifyOpenFailure('IO Error: Could not set lock on file "/x/w.duckdb": Permission denied')).toEqual({
      kind: 'permission',
    });
    expect(
      classifyOpenFailure('IO Error: The file "/x/w.duckdb" exists, but it is not a valid DuckDB database'),
    ).toEqual({
      kind: 'other',
    });
  });
});
