// TEMPORARY stand-in for helper C's client while it is being written. Delete when src/client lands.
import { Pool } from 'undici';
export function createClient(o: { baseUrl: string; apiKey: string; connections?: number; retry?: { retries?: number; baseDelayMs?: number } }): any {
  const pool = new Pool(o.baseUrl, { connections: o.connections ?? 16 });
  return {
    baseUrl: o.baseUrl,
    request: {
      async page(req: any, opts: any = {}) {
        for (let attempt = 0; ; attempt++) {
          opts.signal?.throwIfAborted();
          const res = await pool.request({ path: '/request', method: 'POST', headers: { authorization: `Bearer ${o.apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify(req), signal: opts.signal });
          const text = await res.body.text();
          if ((res.statusCode === 429 || res.statusCode >= 500) && attempt < (o.retry?.retries ?? 5)) {
            const ra = Number(res.headers['retry-after'] ?? NaN);
            const delayMs = Number.isFinite(ra) ? ra * 1000 : (o.retry?.baseDelayMs ?? 500) * 2 ** attempt;
            opts.onRetry?.({ status: res.statusCode, delayMs, reason: String(res.statusCode) });
            await new Promise((r, j) => { const t = setTimeout(r, delayMs); opts.signal?.addEventListener('abort', () => { clearTimeout(t); j(opts.signal.reason); }); });
            continue;
          }
          if (res.statusCode !== 200 || res.headers['x-brd-error'] || text === '') throw Object.assign(new Error(`status ${res.statusCode}`), { status: res.statusCode });
          let payload = JSON.parse(text);
          if (req.format === 'json') payload = JSON.parse(payload.body);
          return { payload, bytes: text.length, fetchedAt: new Date() };
        }
      },
    },
    close: () => pool.close(),
  };
}
