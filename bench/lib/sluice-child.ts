/**
 * `sluice run` in a child process, for runs that are to die: the real CLI (bin/sluice.js, dist/), spawned
 * asynchronously so that an emulator in this process answers its requests, with a failpoint armed
 * (src/core/failpoints.ts) or killed from outside. Used by the crash matrix (bench/crash-matrix.ts) and the sink
 * conformance suite (test/sinks/conformance/).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { FAILPOINTS_ENV } from '../../src/core/failpoints.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const BIN = path.join(ROOT, 'bin/sluice.js');

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
}

/**
 * `node bin/sluice.js run <file> --no-progress` in the pipeline file's directory. The child never inherits
 * failpoints, a key or an address from this environment: `env` gives what it is to have.
 */
export function spawnRun(file: string, env: Record<string, string>): { child: ChildProcess; done: Promise<Exit> } {
  const inherited: Record<string, string | undefined> = { ...process.env };
  for (const k of [FAILPOINTS_ENV, 'SLUICE_BASE_URL', 'SLUICE_API_KEY']) delete inherited[k];
  const child = spawn(process.execPath, [BIN, 'run', file, '--no-progress'], {
    cwd: path.dirname(file),
    env: { ...inherited, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (s: string) => (stderr += s));
  const done = new Promise<Exit>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => resolve({ code, signal, stderr }));
  });
  return { child, done };
}

export interface KilledRun {
  /** Died by SIGKILL at the failpoint (its stderr names it). */
  died: boolean;
  /** How it ended when it did not die there. */
  endedAs?: string;
  stderr: string;
}

/** A run that must die by SIGKILL at `failpoint` (`name` or `name=N`). */
export async function runKilledAt(
  file: string,
  failpoint: string,
  env: Record<string, string> = {},
): Promise<KilledRun> {
  const x = await spawnRun(file, { ...env, [FAILPOINTS_ENV]: failpoint }).done;
  const name = failpoint.split('=')[0]!;
  const died = x.signal === 'SIGKILL' && x.stderr.includes(`failpoint ${name} reached`);
  return { died, ...(!died && { endedAs: endedAs(x) }), stderr: x.stderr };
}

/** How a child ended, for a message: its signal, or its exit code and last lines. */
export function endedAs(x: Exit): string {
  return x.signal ?? `exit ${x.code}: ${x.stderr.trimEnd().split('\n').slice(-2).join(' / ')}`;
}
