/**
 * The failpoints a compaction passes, in the order they strike (src/sink-kit/output-files/compact.ts): the kill tests of
 * test/operations/compact.test.ts (CI) and compact-interrupted.test.ts strike each, with `compactKilled`, and the crash
 * matrix's check that every failpoint is struck counts them.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { FAILPOINTS_ENV, type FailpointName } from '../../src/core/failpoints.js';

const BIN = path.resolve(import.meta.dirname, '../../bin/sluice.js');

export const COMPACT_FAILPOINTS: readonly FailpointName[] = [
  'compact:written',
  'files:before-manifest',
  'files:after-manifest',
  'files:after-rename',
  'compact:after-remove',
];

/** `sluice compact <file>` in a child process (in `cwd`) that must die by SIGKILL at `failpoint`. */
export function compactKilled(
  file: string,
  cwd: string,
  failpoint: string,
): Promise<{ died: boolean; stderr: string }> {
  const child = spawn(process.execPath, [BIN, 'compact', file], {
    cwd,
    env: { ...process.env, [FAILPOINTS_ENV]: failpoint },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (_code, signal) =>
      resolve({ died: signal === 'SIGKILL' && stderr.includes(`failpoint ${failpoint} reached`), stderr }),
    );
  });
}
