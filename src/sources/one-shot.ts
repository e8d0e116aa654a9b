/** Sources whose whole result is one small API answer: one work unit, rows computed from the answer. */
import type { ServiceClient } from '../client/index.js';
import type { Batch, ComponentDeps, Row, Source, SourceContext, WorkUnit } from '../core/types.js';

export function oneShotSource(
  deps: ComponentDeps,
  unitId: string,
  fetchRows: (client: ServiceClient) => Promise<Row[]>,
): Source {
  return {
    async plan(ctx: SourceContext): Promise<WorkUnit[]> {
      ctx.report?.('request', unitId);
      return [{ id: unitId, params: { fetched_at: new Date().toISOString() } }];
    },
    async *read(): AsyncIterable<Batch> {
      const rows = await fetchRows(await deps.client());
      if (rows.length > 0) yield rows;
    },
  };
}
