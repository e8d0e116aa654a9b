/** The `write: merge` ↔ `primary_key` rule, the same for every sink that upserts (DuckDB, Postgres). */
import type { z } from 'zod';

export function mergeKeyRule(
  c: { write: string; primary_key?: readonly string[] | undefined },
  ctx: z.RefinementCtx,
): void {
  if (c.write === 'merge' && !c.primary_key)
    ctx.addIssue({
      code: 'custom',
      path: ['primary_key'],
      message: '`write: merge` needs `primary_key`: the column(s) that identify a row, e.g. `primary_key: [id]`',
    });
  if (c.write !== 'merge' && c.primary_key)
    ctx.addIssue({
      code: 'custom',
      path: ['primary_key'],
      message: '`primary_key` is only used with `write: merge`: remove it, or set `write: merge`',
    });
}
