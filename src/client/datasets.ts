/** Marketplace datasets: list, metadata, filter jobs (paid), snapshot status, parts and streamed downloads. */
import { FormData } from 'undici';
import type { DatasetsApi, Download, DownloadParams, FilterRequest, SnapshotMeta } from './api.js';
import { NotReadyError } from './errors.js';
import type { HttpCore } from './http.js';

export function datasetsApi(http: HttpCore): DatasetsApi {
  const snapshotPath = (id: string): string => `/datasets/snapshots/${encodeURIComponent(id)}`;
  return {
    list: () => http.json({ method: 'GET', path: '/datasets/list' }),

    metadata: (datasetId) => http.json({ method: 'GET', path: `/datasets/${encodeURIComponent(datasetId)}/metadata` }),

    async filter(req: FilterRequest) {
      if (!req.files?.length) {
        // JSON mode (api-facts §2.1): everything in the body.
        return http.json({
          method: 'POST',
          path: '/datasets/filter',
          paid: true,
          json: {
            dataset_id: req.dataset_id,
            filter: req.filter,
            ...(req.records_limit !== undefined && { records_limit: req.records_limit }),
          },
        });
      }
      // Multipart mode: dataset_id and records_limit move to the query string; filter values name the files.
      const form = new FormData();
      form.set('filter', JSON.stringify(req.filter));
      for (const f of req.files) {
        const type = f.contentType ?? (f.name.toLowerCase().endsWith('.json') ? 'application/json' : 'text/csv');
        form.append('files[]', new Blob([f.content], { type }), f.name);
      }
      return http.json({
        method: 'POST',
        path: '/datasets/filter',
        paid: true,
        query: { dataset_id: req.dataset_id, records_limit: req.records_limit },
        form,
      });
    },

    snapshot: (id) => http.json<SnapshotMeta>({ method: 'GET', path: snapshotPath(id) }),

    parts: (id, p) =>
      http.json({
        method: 'GET',
        path: `${snapshotPath(id)}/parts`,
        query: { format: p.format, compress: p.compress, batch_size: p.batch_size },
      }),

    async download(id: string, p: DownloadParams): Promise<Download> {
      const path = `${snapshotPath(id)}/download`;
      const res = await http.send({
        method: 'GET',
        path,
        query: { format: p.format, compress: p.compress, batch_size: p.batch_size, part: p.part },
        accept: [202],
      });
      if (res.status === 202) {
        const text = (await res.body.toArray()).join('').trim();
        throw new NotReadyError({ method: 'GET', path, serviceMessage: text || 'Snapshot is building' });
      }
      return res;
    },
  };
}
