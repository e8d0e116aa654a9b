/**
 * Pagination strategies of the crawls, their unit ids, and query lists.
 *
 * SERP pages say where the next page starts (`pagination.next_page_start`, else `start=` in `next_page_link`); the
 * page size varies, so it is read from the data and never assumed to be 10. Review pages carry no pagination block,
 * so the next offset is this page's offset plus the reviews it held.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parse as parseCsv } from 'csv-parse/sync';
import { SluiceError } from '../../core/errors.js';

type Obj = Record<string, unknown>;

function asObject(v: unknown): Obj | undefined {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : undefined;
}

function toInt(v: unknown): number | undefined {
  const n = typeof v === 'string' && v.trim() !== '' ? Number(v) : v;
  return typeof n === 'number' && Number.isInteger(n) && n >= 0 ? n : undefined;
}

/** The `start` query parameter of a (possibly relative) link. */
export function startFromLink(link: unknown): number | undefined {
  if (typeof link !== 'string' || link === '') return undefined;
  try {
    return toInt(new URL(link, 'https://placeholder.invalid').searchParams.get('start'));
  } catch {
    return undefined;
  }
}

/** Organic results on a SERP page: `organic` plus the misspelled `oragnic`, de-duplicated by link. */
export function organicCount(payload: Obj): number {
  const seen = new Set<string>();
  let n = 0;
  for (const key of ['organic', 'oragnic']) {
    const list = payload[key];
    if (!Array.isArray(list)) continue;
    for (const item of list) {
      const link = asObject(item)?.link;
      if (typeof link === 'string') {
        if (seen.has(link)) continue;
        seen.add(link);
      }
      n++;
    }
  }
  return n;
}

export type PageOutcome =
  { next: number } | { stop: 'last_page' | 'empty_page' | 'max_pages' | 'short_page' | 'no_progress' };

/**
 * Where the SERP page after this one starts, or why there is none. `page` is 1-based.
 * Order of evidence: `next_page_start`; `start=` of `next_page_link`; the `pages[]` entry of `next_page`; and, when
 * the service says there is a next page but not where, this page's start plus the results it held.
 */
export function nextSerpPage(payload: Obj, start: number, page: number, maxPages: number): PageOutcome {
  const results = organicCount(payload);
  if (results === 0) return { stop: 'empty_page' };
  if (page >= maxPages) return { stop: 'max_pages' };
  const p = asObject(payload.pagination);
  if (p === undefined) return { stop: 'last_page' };
  let next = toInt(p.next_page_start) ?? startFromLink(p.next_page_link);
  const nextPage = toInt(p.next_page);
  if (next === undefined && nextPage !== undefined) {
    const entry = (Array.isArray(p.pages) ? p.pages : []).map(asObject).find((e) => toInt(e?.page) === nextPage);
    next = toInt(entry?.start) ?? startFromLink(entry?.link) ?? start + results;
  }
  if (next === undefined) return { stop: 'last_page' };
  // A next page that does not move forward would loop forever.
  if (next <= start) return { stop: 'no_progress' };
  return { next };
}

/**
 * Where the reviews page after this one starts. There is no pagination block: the next offset is `start` plus the
 * reviews on this page. The crawl stops on an empty page, at `maxPages`, or when a page holds fewer reviews than
 * the first page did (`firstPageSize`; the first page itself defines it) — a short page is the last one.
 */
export function nextReviewsPage(
  reviews: number,
  start: number,
  page: number,
  maxPages: number,
  firstPageSize: number | undefined,
): PageOutcome {
  if (reviews === 0) return { stop: 'empty_page' };
  if (page >= maxPages) return { stop: 'max_pages' };
  if (page > 1 && firstPageSize !== undefined && reviews < firstPageSize) return { stop: 'short_page' };
  return { next: start + reviews };
}

/** Reviews on a reviews page. */
export function reviewCount(payload: Obj): number {
  return Array.isArray(payload.reviews) ? payload.reviews.length : 0;
}

/** `knowledge.fid` of a SERP page (the knowledge block may also be a list of panels). */
export function knowledgeFids(payload: Obj): string[] {
  const k = payload.knowledge;
  const panels = Array.isArray(k) ? k : [k];
  return panels.map((p) => asObject(p)?.fid).filter((f): f is string => typeof f === 'string' && f.length > 0);
}

// ---- unit ids ------------------------------------------------------------------------------------------------------

/** A feature id: two colon-joined hex values, each prefixed `0x`. */
export const FID_PATTERN = /^0x[0-9a-f]+:0x[0-9a-f]+$/i;

/** Host of a search engine URL, lower case (`www.google.com`). */
export function engineHost(engine: string): string {
  return new URL(engine).host.toLowerCase();
}

/**
 * `serp:<engine-host>:<query>:start:<n>`. The query is percent-encoded (`encodeURIComponent`), so a `:` in it cannot
 * be confused with the separators, and the id is the same on every run.
 */
export function serpUnitId(host: string, query: string, start: number): string {
  return `${serpChainKey(host, query)}:start:${start}`;
}

/** The part of a SERP unit id shared by all pages of one query. */
export function serpChainKey(host: string, query: string): string {
  return `serp:${host}:${encodeURIComponent(query)}`;
}

export function parseSerpUnitId(id: string): { host: string; query: string; start: number } | undefined {
  const m = /^serp:([^:]+(?::\d+)?):([^:]*):start:(\d+)$/.exec(id);
  if (!m) return undefined;
  try {
    return { host: m[1]!, query: decodeURIComponent(m[2]!), start: Number(m[3]) };
  } catch {
    return undefined;
  }
}

/** `reviews:<fid>:start:<n>` (a fid is `0x…:0x…`, so the id holds its colon as is). */
export function reviewsUnitId(fid: string, start: number): string {
  return `reviews:${fid}:start:${start}`;
}

export function parseReviewsUnitId(id: string): { fid: string; start: number } | undefined {
  const m = /^reviews:(.+):start:(\d+)$/.exec(id);
  return m ? { fid: m[1]!, start: Number(m[2]) } : undefined;
}

// ---- query lists ---------------------------------------------------------------------------------------------------

/**
 * Queries from a file: a CSV whose header has a `query` column (required in a `.csv` file), or else one query per
 * line (blank lines skipped).
 * Relative paths resolve against `baseDir` (the pipeline file's directory).
 */
export async function readQueriesFile(file: string, baseDir: string): Promise<string[]> {
  const full = path.resolve(baseDir, file);
  let text: string;
  try {
    text = await readFile(full, 'utf8');
  } catch (err) {
    throw new SluiceError(`cannot read queries_file ${full}: ${(err as Error).message}`, {
      hint: 'queries_file is relative to the pipeline file; check the path',
      cause: err,
    });
  }
  text = text.replace(/^\uFEFF/, '');
  const firstLine = text.split(/\r?\n/, 1)[0] ?? '';
  let header: string[] = [];
  try {
    header = (parseCsv(firstLine, { relax_quotes: true }) as string[][])[0] ?? [];
  } catch {
    header = [];
  }
  const col = header.findIndex((h) => h.trim().toLowerCase() === 'query');
  // A .csv file is read as CSV: taking its lines as queries would search for the header and for whole rows.
  if (col < 0 && /\.csv$/i.test(full))
    throw new SluiceError(`queries_file ${full} has no \`query\` column (its header is "${header.join(',')}")`, {
      hint: 'name the column that holds the queries `query`, or use a text file (not .csv) with one query per line',
    });
  let queries: string[];
  if (col >= 0) {
    let rows: string[][];
    try {
      rows = parseCsv(text, { relax_column_count: true, skip_empty_lines: true }) as string[][];
    } catch (err) {
      throw new SluiceError(`queries_file ${full} is not valid CSV: ${(err as Error).message}`, {
        hint: 'quote fields that contain commas, or use a plain file with one query per line',
        cause: err,
      });
    }
    queries = rows.slice(1).map((r) => (r[col] ?? '').trim());
  } else {
    queries = text.split(/\r?\n/).map((l) => l.trim());
  }
  queries = queries.filter((q) => q !== '');
  if (queries.length === 0)
    throw new SluiceError(`queries_file ${full} holds no queries`, {
      hint: 'write one query per line, or a CSV with a `query` column',
    });
  return queries;
}

/** Queries in first-seen order without repeats (a repeat would be the same units). */
export function uniqueQueries(queries: string[]): string[] {
  return [...new Set(queries.map((q) => q.trim()).filter((q) => q !== ''))];
}
