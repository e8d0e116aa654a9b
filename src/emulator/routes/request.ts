/**
 * `POST /request {zone, url, format}`: fetches a search or reviews page "through a zone".
 *
 * - The body is validated (`{"error":"Request validation failed","error_code":"validation"}` on 400); the zone must
 *   exist (else 400 text `zone "<name>" not found`) and serve search pages (`serp` or `unblocker`; else 403 with
 *   `x-brd-err-code: client_10090`, as the service answers a zone of the wrong kind).
 * - `{engine}/search?q=&start=` → a structured search result (data/serp.ts); `{engine}/maps/search/<query>/` → a
 *   map search page whose results are places with their `fid` (data/serp.ts `mapsPage`);
 *   `{engine}/reviews?fid=&start=` → `{reviews}` (data/reviews.ts); review pages repeat the first page for every
 *   `start` once the emulated clock is past the maps `start` deprecation (option `reviewPaging`). Under the
 *   `page_repeat` fault a search page asked for at `start` > 0 answers the first page. Structured JSON only with `brd_json=1` in the target URL, else a small HTML
 *   page. `num` is ignored (deprecated).
 * - `format: raw` answers the page itself; `format: json` the envelope `{status_code, headers, body}` with the page
 *   as a string.
 * - A target the emulator does not serve (another path, no `q`, a malformed fid) answers HTTP 200 with an empty
 *   body and `x-brd-error` headers: the real service reports target-side failures that way, and clients must
 *   treat them as errors.
 * - Errors that fail the same way every time (docs/service.md §5.6), reported the same way with status 502 in
 *   `x-brd-status-code`: `unexpected_q` for a search query longer than the engine's 32 words (the engine cuts it, so
 *   `detected_query` would differ from `query`), and `no_peers` under the `no_peers` fault. Neither is billed.
 * - A throttled zone (the `sr_rate_limit` fault): the service throttles the zone for the rule's `throttle_s` emulated
 *   seconds, and answers every request through it meanwhile with HTTP 200, `x-brd-status-code: 429` and
 *   `x-brd-error-code: sr_rate_limit` (docs/service.md §5.6), unbilled. The server counts such a 429 toward the
 *   client IP's block like one given outright.
 * - Only a page answered is billed (`GET /_emulator/counters` `requests`): every refusal above, and a fault given
 *   before the route (a 5xx, a 429), is not.
 */
import { z } from 'zod';
import type { EmulatorContext } from '../context.js';
import { HttpError, type EmuResponder, type Router } from '../router.js';
import { reviewStartHonoured, reviewsPage } from '../data/reviews.js';
import { mapsPage, serpPage } from '../data/serp.js';
import { serpRng } from '../data/serp-rng.js';
import { isSearch, zoneStateFor } from '../zones-state.js';

const bodySchema = z.looseObject({
  zone: z.string().min(1),
  url: z.string().min(1),
  format: z.enum(['raw', 'json']),
});

const FID = /^0x[0-9a-f]+:0x[0-9a-f]+$/i;

type Obj = Record<string, unknown>;

export function register(router: Router, ctx: EmulatorContext): void {
  const zones = zoneStateFor(ctx);
  let served = 0;
  // Saved so that request ids stay unique across restarts sharing a state file.
  const saved = ctx.state.section('serp_requests', z.object({ served: z.number().int().nonnegative() }), () => ({
    served,
  }));
  if (saved) served = saved.served;

  /** Zones the service throttles for a low success rate (the `sr_rate_limit` fault): until when, emulated ms. */
  const throttledUntil = new Map<string, number>();

  router.post('/request', async (req, res) => {
    const body = parseBody(await req.json());
    if (req.fault?.kind === 'no_peers') {
      ctx.stats.countFault('no_peers');
      return serviceError(res, 'no_peers', 'No peers available for this request (zone targeting or country)');
    }
    const zone = zones.get(body.zone);
    if (!zone) throw new HttpError(400, `zone "${body.zone}" not found`);
    const now0 = ctx.clock.now();
    if (req.fault?.kind === 'sr_rate_limit' && !((throttledUntil.get(zone.name) ?? -Infinity) > now0))
      throttledUntil.set(zone.name, now0 + req.fault.throttleS * 1000);
    if ((throttledUntil.get(zone.name) ?? -Infinity) > now0) {
      ctx.stats.countFault('sr_rate_limit');
      return serviceError(
        res,
        'sr_rate_limit',
        `Zone "${zone.name}" is auto-throttled due to low success rate; requests are limited`,
        429,
      );
    }
    if (!isSearch(zone)) {
      const msg = `Zone "${zone.name}" of type ${zone.type} cannot be used for this request; use a SERP zone`;
      throw new HttpError(403, '', {
        'x-brd-err-code': 'client_10090',
        'x-brd-err-msg': msg,
        'x-brd-error': msg,
        'x-luminati-error': msg,
      });
    }

    const target = new URL(body.url);
    const host = target.host.toLowerCase();
    const q = target.searchParams;
    const start = parseStart(q.get('start'));
    const now = new Date(ctx.clock.now());
    const requestId = `hl_${serpRng(ctx.options.seed, 'request-id', served++).hex(12)}`;
    ctx.state.changed();
    const structured = q.get('brd_json') === '1';

    let page: Obj;
    const mapsQuery = /^\/maps\/search\/([^/]+)\/?$/.exec(target.pathname)?.[1];
    if (target.pathname === '/search') {
      const query = q.get('q');
      if (!query?.trim()) return targetError(res, 400, 'the search URL has no q parameter');
      if (query.trim().split(/\s+/).length > MAX_QUERY_WORDS)
        return serviceError(
          res,
          'unexpected_q',
          `the engine cut the query to ${MAX_QUERY_WORDS} words: unexpected query`,
        );
      // The page-repeat fault: the service answers the query's first page whatever `start` asked for.
      const repeat = req.fault?.kind === 'page_repeat' && start > 0;
      if (repeat) ctx.stats.countFault('page_repeat');
      page = serpPage(ctx.options.seed, host, query, repeat ? 0 : start, { now, originalUrl: body.url, requestId });
    } else if (mapsQuery !== undefined) {
      const query = decodeQuery(mapsQuery);
      if (!query?.trim()) return targetError(res, 400, 'the map search URL has no query');
      page = mapsPage(ctx.options.seed, host, query);
    } else if (target.pathname === '/reviews') {
      const fid = q.get('fid');
      if (!fid || !FID.test(fid)) return targetError(res, 400, 'the reviews URL needs fid=0x…:0x…');
      // Once `start` is no longer honoured (data/reviews.ts), every start answers the place's first page.
      const honoured = reviewStartHonoured(ctx.options.reviewPaging ?? 'dated', now.getTime());
      page = reviewsPage(ctx.options.seed, fid, honoured ? start : 0, now, ctx.clock.pinned);
    } else {
      return targetError(
        res,
        404,
        `the emulator serves ${host}/search, ${host}/maps/search/<query>/ and ${host}/reviews only`,
      );
    }

    const text = structured ? JSON.stringify(page) : html(page);
    const contentType = structured ? 'application/json; charset=utf-8' : 'text/html; charset=utf-8';
    zones.recordTraffic(zone.name, Buffer.byteLength(text), ctx.clock.now());
    // Billed: a page answered (docs/service.md §5.6). The account's bill outlives the process (--state-file).
    ctx.stats.billRequest();
    ctx.state.changed();
    if (body.format === 'json') {
      return res.json(200, {
        status_code: 200,
        headers: { 'content-type': contentType, date: now.toUTCString() },
        body: text,
      });
    }
    res.text(200, text, { 'content-type': contentType });
  });
}

function parseBody(value: unknown): z.output<typeof bodySchema> {
  const parsed = bodySchema.safeParse(value);
  const errors = parsed.success ? [] : parsed.error.issues.map((i) => `"${i.path.join('.')}" ${i.message}`);
  if (parsed.success) {
    try {
      const u = new URL(parsed.data.url);
      if (u.protocol === 'http:' || u.protocol === 'https:') return parsed.data;
    } catch {
      // reported below
    }
    errors.push('"url" must be an http(s) URL');
  }
  throw new HttpError(400, { error: 'Request validation failed', error_code: 'validation', validation_errors: errors });
}

/** A path segment as the engine reads it: percent-decoded, `+` a space. */
function decodeQuery(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment.replace(/\+/g, ' '));
  } catch {
    return undefined;
  }
}

function parseStart(v: string | null): number {
  const n = v === null ? 0 : Number(v);
  return Number.isInteger(n) && n >= 0 ? n : 0;
}

/** Words the search engine reads of a query; it drops the rest (and the service then answers `unexpected_q`). */
const MAX_QUERY_WORDS = 32;

/**
 * The service's own failure, reached after the request was accepted by the page fetcher: HTTP 200, the real status,
 * the code and the message in headers (docs/service.md §5.6).
 */
function serviceError(res: EmuResponder, code: string, message: string, status = 502): void {
  res.text(200, '', { 'x-brd-error': message, 'x-brd-error-code': code, 'x-brd-status-code': String(status) });
}

/** The target failed: HTTP 200, empty body, the failure in `x-brd-*` headers. */
function targetError(res: EmuResponder, status: number, message: string): void {
  res.text(200, '', {
    'x-brd-error': message,
    'x-brd-error-code': 'http_status',
    'x-brd-status-code': String(status),
  });
}

function escapeHtml(s: unknown): string {
  return String(s ?? '').replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** A bare page for requests without `brd_json=1`: what a client that forgot it would get. */
function html(page: Obj): string {
  if (Array.isArray(page.reviews)) {
    const items = (page.reviews as Obj[]).map((r) => `<div class="review">${escapeHtml(r.comment)}</div>`);
    return `<!doctype html><html><head><title>Reviews</title></head><body>${items.join('')}</body></html>`;
  }
  const general = (page.general ?? {}) as Obj;
  const items = [...((page.organic as Obj[]) ?? []), ...((page.oragnic as Obj[]) ?? [])].map(
    (o) => `<div class="g"><a href="${escapeHtml(o.link)}"><h3>${escapeHtml(o.title)}</h3></a></div>`,
  );
  return `<!doctype html><html><head><title>${escapeHtml(general.page_title)}</title></head><body><div id="search">${items.join('')}</div></body></html>`;
}
