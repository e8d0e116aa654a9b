/**
 * Stage 2, plan: the source's service preflight, then the source splits the job into units (starting a paid job when it must, checkpointed first), and a
 * sharded run keeps its share of them.
 */
import { createHash } from 'node:crypto';
import type { Source, SourceContext, WorkUnit } from '../../core/types.js';

export interface Shard {
  index: number;
  count: number;
}

export async function planUnits(source: Source, ctx: SourceContext, shard?: Shard): Promise<WorkUnit[]> {
  // Once per run, before the source may start paid work: a zone typo or an unknown dataset fails here, not after
  // the first requests were paid for (free calls only).
  await source.preflight?.(ctx);
  const planned = await source.plan(ctx);
  return shard ? planned.filter((u) => inShard(u, shard)) : planned;
}

/** For the progress display: `12 unit(s) planned in shard 1/4`. */
export function planLine(planned: readonly WorkUnit[], shard?: Shard): string {
  return `${planned.length} unit(s) planned${shard ? ` in shard ${shard.index}/${shard.count}` : ''}`;
}

/**
 * Every unit falls in exactly one shard, by a stable hash. Crawls put the query or fid in `shard_key`, so all pages
 * of one query land in the same shard (a page's successor is discovered by the shard that read the page).
 */
export function inShard(u: WorkUnit, shard: Shard): boolean {
  const key = typeof u.params.shard_key === 'string' ? u.params.shard_key : u.id;
  const h = createHash('sha1').update(key).digest().readUInt32BE(0);
  return h % shard.count === shard.index;
}
