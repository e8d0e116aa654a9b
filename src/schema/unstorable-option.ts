/**
 * The `on_unstorable` option every sink offers, and the policy it picks. Apart from the judge (storable.ts) because
 * sink configs need only this: a config schema should not pull in the judge's walk, and the option's words must be
 * one text for every sink.
 */
import { z } from 'zod';
import type { UnstorablePolicy } from '../core/types.js';

/** The `on_unstorable` option of every sink. */
export const onUnstorableOption = z
  .enum(['dead_letter', 'repair'])
  .optional()
  .describe(
    'A record the store cannot hold as it is (a key it cannot name — empty, NUL, too long, reserved, differing only in case from another —, nesting too deep, too large, too many columns, a partition value that cannot be a directory): `dead_letter` (default) sends it to the dead letters with the reason and its position; `repair` renames such keys (`<key>_<hash>`) and cuts over-long text, and logs what it changed (nesting, columns and partition values cannot be repaired: those records are dead-lettered).',
  );

/** The policy a sink's config chose (`on_unstorable`); absent: `dead_letter`. */
export function unstorablePolicy(config: Readonly<Record<string, unknown>> | undefined): UnstorablePolicy {
  return config?.on_unstorable === 'repair' ? 'repair' : 'dead_letter';
}
