/**
 * The result lists of a SERP page: organic results, image items and related searches. Each list's content depends
 * only on the seed, engine, query and position, so the page builder (serp.ts) asks for them by position; kept apart
 * from it because these pools and shapes change with what a result looks like, the page with how pages are cut.
 */
import { serpRng, type SerpRng } from './serp-rng.js';
import { capitalize, dataUri, hashIndex, searchLink, slugify, sourceName } from './serp-text.js';

type Obj = Record<string, unknown>;

const DOMAINS = [
  'en.wikipedia.org',
  'www.reddit.com',
  'www.youtube.com',
  'www.yelp.com',
  'www.tripadvisor.com',
  'medium.com',
  'www.nytimes.com',
  'www.theguardian.com',
  'github.com',
  'www.quora.com',
  'www.timeout.com',
  'www.eater.com',
  'stackoverflow.com',
  'www.bbc.com',
  'www.lonelyplanet.com',
  'www.cnet.com',
  'www.healthline.com',
  'www.allrecipes.com',
];

const SECTIONS = ['guides', 'wiki', 'blog', 'news', 'r', 'watch', 'biz', 'articles', 'reviews', 'learn'];

const TITLES = [
  'The best {q} in 2025',
  '{Q} - Wikipedia',
  '{Q}: a complete guide',
  'Top 10 {q} you should know',
  '{Q} | {S}',
  'Why {q} matters',
  '{Q} reviews and ratings',
  'Everything about {q}',
  '{Q} explained in 5 minutes',
  'Where to find {q}',
];

const PHRASES = [
  'Find out what locals recommend about',
  'A hands-on look at',
  'Compare prices, opening hours and reviews for',
  'Our editors picked the best options for',
  'Learn the history and background of',
  'Tips, tricks and common mistakes with',
  'Updated weekly with new information on',
  'Read what thousands of people say about',
];

const FILLER = [
  'Updated for this year.',
  'Includes maps and photos.',
  'Free to read.',
  'Written by experts.',
  'See the full list inside.',
  'Sources and further reading included.',
];

/** Result `i` of the query: its content depends only on (seed, host, query, i), so pages can be built alone. */
export function organicResult(seed: number, host: string, query: string, i: number): Obj {
  const r = serpRng(seed, 'organic', host, query, i);
  const domain = DOMAINS[(hashIndex(query) + i * 7) % DOMAINS.length] as string;
  const section = r.pick(SECTIONS);
  const slug = `${slugify(query) || 'result'}-${i + 1}${r.hex(3)}`;
  const link = `https://${domain}/${section}/${slug}`;
  const source = sourceName(domain);
  const item: Obj = {
    link,
    source,
    display_link: `https://${domain} › ${section} › ${slug}`,
    title: r.pick(TITLES).replace('{q}', query).replace('{Q}', capitalize(query)).replace('{S}', source),
    description: `${r.pick(PHRASES)} ${query}. ${r.pick(FILLER)}`,
  };
  if (r.bool(0.5)) item.icon = dataUri(r, 'png', 24);
  if (r.bool(0.2)) {
    const image = dataUri(r, 'jpeg', 48);
    item.image = image;
    item.image_base64 = image;
  }
  if (domain === 'www.youtube.com') {
    const sec = r.int(45, 3600);
    item.duration = `${Math.floor(sec / 60)}:${String(sec % 60).padStart(2, '0')}`;
    item.duration_sec = sec;
  }
  if (r.bool(0.5))
    item.snippet_highlighted_words = query
      .split(/\s+/)
      .filter((w) => w.length > 2)
      .slice(0, 3);
  if (r.bool(0.3)) {
    item.extensions = Array.from({ length: r.int(1, 4) }, (_, k) => ({
      inline: r.bool(0.5),
      type: r.pick(['site_link', 'text', 'description']),
      text: r.pick(['Opening hours', 'Menu', 'Prices', 'Contact', 'About us', 'Reviews', 'Directions']),
      rank: k + 1,
    }));
  }
  return item;
}

export function imageItems(r: SerpRng, query: string): Obj[] {
  return Array.from({ length: r.int(2, 5) }, (_, k) => {
    const domain = r.pick(DOMAINS);
    const image = dataUri(r, 'jpeg', 40);
    const item: Obj = {
      original_image: `https://${domain}/images/${slugify(query)}-${k + 1}.jpg`,
      link: `https://${domain}/${slugify(query)}/photo-${k + 1}`,
      title: `${capitalize(query)} photo ${k + 1}`,
      source: sourceName(domain),
      source_logo: dataUri(r, 'png', 16),
      image,
      image_alt: `${capitalize(query)} on ${sourceName(domain)}`,
      image_base64: image,
    };
    if (r.bool(0.3)) {
      const sec = r.int(10, 180) * 60;
      item.recipe = {
        rating: Math.round((3 + r.next() * 2) * 10) / 10,
        reviews_cnt: r.int(3, 4000),
        title: `Easy ${query}`,
        ingredients: r.pick([
          ['flour', 'butter', 'sugar', 'eggs'],
          ['rice', 'onion', 'garlic', 'stock'],
          ['pasta', 'tomatoes', 'basil', 'olive oil', 'parmesan'],
        ]),
        summary: `A simple take on ${query} for weeknights.`,
        duration: sec >= 3600 ? `${Math.floor(sec / 3600)} hr ${(sec % 3600) / 60} min` : `${sec / 60} min`,
        duration_sec: sec,
        volume: `${r.int(2, 8)} servings`,
      };
    }
    return item;
  });
}

export function relatedItems(r: SerpRng, host: string, query: string, seed: number): Obj[] {
  const words = ['near me', 'open now', 'best', 'cheap', 'reviews', 'price', 'history', 'map', 'menu', 'hours'];
  const n = r.int(4, 8);
  const offset = r.int(0, words.length - 1);
  return Array.from({ length: n }, (_, k) => {
    const text = `${query} ${words[(offset + k) % words.length]}`;
    return { text, link: searchLink(host, text, 0, seed) };
  });
}
