/** Sources whose whole result is one small API answer: one work unit, rows computed from the answer. */
import type { ServiceClient } from '../client/index.js';
import type { Batch, Row, Source, SourceContext, WorkUnit } from '../core/types.js';
import type { ComponentDeps } from '../contracts/component.js';

export function oneShotSource(
  deps: ComponentDeps,
  unitId: string,
  fetchRows: (client: ServiceClient) => Promise<Row[]>,
): Source {
  return {
    // One unit: nothing to read in parallel.
    concurrency: 1,
    incremental: false,
    async plan(ctx: SourceContext): Promise<WorkUnit[]> {
      ctx.report?.('request', unitId);
      return [{ id: unitId, params: {} }];
    },
    async *read(): AsyncIterable<Batch> {
      const rows = await fetchRows(await deps.client());
      if (rows.length > 0) yield rows;
    },
  };
}
