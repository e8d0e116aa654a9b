/**
 * Deep lookup under `/datasets/deep_lookup/v1` (docs/service.md §4): preview, trigger (paid), status, data, download
 * (streamed), enrich (paid) and cancel. Trigger and preview bodies are arrays of items, as the service's schema says.
 */
import type { DeepLookupApi, Download } from './api.js';
import type { HttpCore } from './http.js';

const BASE = '/datasets/deep_lookup/v1';

export function deepLookupApi(http: HttpCore): DeepLookupApi {
  const req = (id: string): string => `${BASE}/request/${encodeURIComponent(id)}`;
  return {
    createPreview: (query) => http.json({ method: 'POST', path: `${BASE}/preview`, json: [{ query }] }),
    getPreview: (id) => http.json({ method: 'GET', path: `${BASE}/preview/${encodeURIComponent(id)}` }),
    trigger: (body) =>
      http.json({ method: 'POST', path: `${BASE}/trigger`, paid: true, bills: 'trigger', json: [body] }),
    status: (id) => http.json({ method: 'GET', path: `${req(id)}/status` }),
    get: (id) => http.json({ method: 'GET', path: req(id) }),
    async download(id, format, opts = {}): Promise<Download> {
      return http.send({
        method: 'GET',
        path: `${req(id)}/download`,
        query: { format },
        ...(opts.signal !== undefined && { signal: opts.signal }),
      });
    },
    enrich: (id, columns) =>
      http.json({ method: 'POST', path: `${req(id)}/enrich`, paid: true, bills: 'enrich', json: columns }),
    cancel: (id) => http.json({ method: 'POST', path: `${req(id)}/cancel` }),
  };
}
