/**
 * The small text pieces every SERP page is made of: the engine's links, site names, capitalised and slugged query
 * text, fake image bytes. Shared by the result page (serp.ts), its result lists (serp-results.ts) and map pages
 * (serp-maps.ts), so they stand in a file of their own that imports none of them.
 */
import { serpRng, type SerpRng } from './serp-rng.js';

/** A link to a result page of the query, shaped like the engine's own (extra parameters included). */
export function searchLink(engine: string, query: string, start: number, seed = 0): string {
  const q = encodeURIComponent(query).replace(/%20/g, '+');
  const token = serpRng(seed, 'sca', engine, query).hex(16);
  return `https://${engine}/search?q=${q}&sca_esv=${token}&start=${start}&sa=N`;
}

/** `www.google.com` → `google`: the engine's name as pages and sites show it. */
export function engineName(host: string): string {
  const labels = host.replace(/:\d+$/, '').split('.');
  return labels.length >= 2 ? (labels[labels.length - 2] as string) : host;
}

export function sourceName(domain: string): string {
  const name = engineName(domain);
  return capitalize(name);
}

export function capitalize(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

/**
 * Not dataset-vocab.ts's `slugify`: this one keeps NFKD compatibility forms and cuts at 40 characters, and every
 * generated link is built with it, so merging the two would change the emulator's pages for every seed.
 */
export function slugify(s: string): string {
  return s
    .toLowerCase()
    .normalize('NFKD')
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 40);
}

/** A stable index from text (which domain a query's results start at). */
export function hashIndex(s: string): number {
  let h = 0;
  for (let i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) >>> 0;
  return h;
}

/** A tiny, valid-looking data URI (random payload bytes; nothing decodes it). */
export function dataUri(r: SerpRng, kind: 'png' | 'jpeg', bytes: number): string {
  const buf = Buffer.alloc(bytes);
  for (let i = 0; i < bytes; i++) buf[i] = r.int(0, 255);
  return `data:image/${kind};base64,${buf.toString('base64')}`;
}
