/**
 * `write: replace` and shards do not mix, whatever the sink: each shard would swap in only its own part of the
 * output (a file sink's generation, a table's `__sluice_next`), one after the other. Refused before anything is paid
 * or written, by the engine for every sink (`sluice prepare`, `sluice run --shard`) and by the file output itself.
 */
import { SluiceError } from './errors.js';

export function refuseShardedReplace(
  label: string,
  mode: unknown,
  shard: { index: number; count: number } | undefined,
): void {
  if (shard && mode === 'replace')
    throw new SluiceError(
      `${label}: \`write: replace\` does not work with shards (\`sluice prepare\`, \`--shard\`): each shard would swap in only its own part of the output`,
      {
        hint: 'use `write: append` (or `merge`) into a fresh path or table per load (e.g. a dated prefix) and point readers at it once `sluice finalize` reports every shard committed, or run unsharded',
      },
    );
}
