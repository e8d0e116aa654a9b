/**
 * `dedupe`: drop rows whose key was already seen in this run (in this process), keeping the first.
 *
 * Memory: one entry per distinct key for the whole run — the key fields are hashed (128 bits of SHA-1), so an entry
 * costs roughly 100 bytes whatever the key's size: about 100 MB for a million distinct keys. It does not see rows
 * of earlier runs; to keep a table unique across runs use a sink's `merge` on a primary key.
 *
 * A unit that is read again after a failed attempt is not deduplicated against its own first attempt (that
 * attempt committed nothing), so retries lose no rows.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { Batch, Row, Transform, TransformContext } from '../core/types.js';
import type { ComponentDef } from '../contracts/component.js';
import { describeValue, getPath } from './coerce.js';
import { columnsUnchanged } from './columns-unchanged.js';

export const dedupeSchema = z
  .object({
    type: z.literal('dedupe'),
    key: z
      .array(z.string().min(1))
      .min(1)
      .describe(
        'Fields that identify a record; `a.b` reaches into nested objects. Rows with equal values in all of them are duplicates (a missing field counts as null).',
      ),
  })
  .strict();

export type DedupeConfig = z.infer<typeof dedupeSchema>;

export const dedupeTransform: ComponentDef<'transform', DedupeConfig, Transform> = {
  kind: 'transform',
  type: 'dedupe',
  description: 'Drop repeated records by key, keeping the first seen in the run.',
  schema: dedupeSchema,
  // Rows pass through unchanged (or not at all).
  ...columnsUnchanged,
  create(config) {
    const key = config.key;
    // hash → id of the unit that first kept it. Units run concurrently, so ownership decides who keeps a key.
    const owners = new Map<string, string>();
    return async function* dedupe(batches: AsyncIterable<Batch>, ctx: TransformContext): AsyncIterable<Batch> {
      const seenHere = new Set<string>();
      for await (const batch of batches) {
        const out: Row[] = [];
        for (const row of batch) {
          const h = hashKey(row, key);
          if (seenHere.has(h)) continue;
          seenHere.add(h);
          const owner = owners.get(h);
          if (owner === undefined) owners.set(h, ctx.unitId);
          else if (owner !== ctx.unitId) continue;
          out.push(row);
        }
        if (out.length > 0) yield out;
      }
    };
  },
};

export function hashKey(row: Row, key: readonly string[]): string {
  const h = createHash('sha1');
  for (const f of key) {
    const v = getPath(row, f);
    // Type-tagged so that 1 and "1" differ, length-prefixed so that no two key lists run together the same way.
    const text = v === null || v === undefined ? 'null' : `${typeof v}:${describeValue(v)}`;
    h.update(`${text.length}:${text}`);
  }
  return h.digest().subarray(0, 16).toString('latin1');
}
