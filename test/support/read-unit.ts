/** Reads one unit of a source as the unit path does: its rows, and what the read ended with (`UnitEnd`). */
import type { Row, Source, SourceContext, UnitEnd, WorkUnit } from '../../src/core/types.js';

export async function readUnit(
  source: Source,
  unit: WorkUnit,
  ctx: SourceContext,
): Promise<{ rows: Row[]; end: UnitEnd }> {
  const rows: Row[] = [];
  const it = source.read(unit, ctx)[Symbol.asyncIterator]();
  for (;;) {
    const r = await it.next();
    if (r.done) return { rows, end: r.value ?? {} };
    rows.push(...r.value);
  }
}
