/**
 * `serp_organic`: one row per organic result of a search page.
 *
 * Rank semantics: `rank` is the 1-based position in the page's merged, de-duplicated organic list (`organic`
 * first, then `oragnic`), so ranks on a page are contiguous whatever the two lists held. `position` adds the
 * page's `start` offset (position across the query's pages). `global_rank` is the service's position across every
 * result block of the page (ads, images… included), and `source_rank` / `source_list` are the item's own rank and
 * the list it came from, kept for tracing.
 */
import type { Row, TransformContext } from '../../core/types.js';
import { column, struct, type DeclaredSchema } from '../../core/declared.js';
import { BIGINT, BOOLEAN, DOUBLE, VARCHAR, listOf } from '../../core/logical-type.js';
import { isPlainObject, nonEmpty, toBool, toInteger, toNumber, toText, toTextList, urlOrNull } from '../coerce.js';
import type { PresetOptions } from './preset.js';
import {
  FETCH_COLUMNS,
  PAGE_COLUMNS,
  isSerpPage,
  mergedOrganic,
  serpPageContext,
  type OrganicItem,
} from './serp-page.js';

/** Every row has exactly these keys, in this order (plus `SERP_ORGANIC_IMAGE_DATA_COLUMNS` with `keep_image_data`). */
export const SERP_ORGANIC_COLUMNS: DeclaredSchema = [
  ...PAGE_COLUMNS,
  column('rank', BIGINT, "Position in the page's merged, de-duplicated organic list, 1-based."),
  column('position', BIGINT, "Position across the query's pages: `start` + `rank`."),
  column('global_rank', BIGINT, "The service's position across every result block of the page."),
  column('source_rank', BIGINT, "The item's own `rank` in the list it came from."),
  column('source_list', VARCHAR, 'The list it came from: `organic` or `oragnic`.', false),
  column('link', VARCHAR, 'Result URL.'),
  column('title', VARCHAR, 'Result title.'),
  column('description', VARCHAR, 'Result snippet.'),
  column('source', VARCHAR, 'Site name the engine shows.'),
  column('display_link', VARCHAR, 'Display text of the URL (not a URL).'),
  column(
    'extensions',
    listOf(struct({ type: VARCHAR, text: VARCHAR, link: VARCHAR, inline: BOOLEAN, extended: BOOLEAN, rank: BIGINT })),
    'Site links and other extensions of the result.',
  ),
  column('snippet_highlighted_words', listOf(VARCHAR), 'Words the engine highlighted in the snippet.'),
  column('has_icon', BOOLEAN, 'The result had an icon.', false),
  column('has_image', BOOLEAN, 'The result had an image (URL or inline data).', false),
  column('image_url', VARCHAR, 'Image URL (inline `data:` images are not URLs: null).'),
  column('image_alt', VARCHAR, 'Alt text of the image.'),
  column('duration', VARCHAR, 'Video length as shown, e.g. `14:02`.'),
  column('duration_sec', BIGINT, 'Video length in seconds.'),
  column('fid', VARCHAR, "Maps result pages: the place's feature id (what reviews are fetched by)."),
  column('address', VARCHAR, "Maps result pages: the place's address."),
  column('phone', VARCHAR, "Maps result pages: the place's phone number."),
  column('category', listOf(VARCHAR), "Maps result pages: the place's categories."),
  column('tags', listOf(struct({ group: VARCHAR, value: VARCHAR })), 'Maps result pages: amenities and other tags.'),
  column('summary', VARCHAR, 'Maps result pages: one-line summary of the place.'),
  column('rating', DOUBLE, "Maps result pages: the place's average rating."),
  column('reviews_cnt', BIGINT, 'Maps result pages: number of reviews of the place.'),
  column('latitude', DOUBLE, 'Maps result pages: latitude of the place.'),
  column('longitude', DOUBLE, 'Maps result pages: longitude of the place.'),
  column('claimed', BOOLEAN, 'Maps result pages: the owner claimed the listing.'),
  column('map_link', VARCHAR, 'Maps result pages: link to the place on the map.'),
  ...FETCH_COLUMNS,
];

/** `keep_image_data: true` adds these, after the others. */
export const SERP_ORGANIC_IMAGE_DATA_COLUMNS: DeclaredSchema = [
  column('icon', VARCHAR, 'Inline icon (`data:` URI).'),
  column('image', VARCHAR, 'Inline image (`data:` URI) or image URL.'),
  column('image_base64', VARCHAR, 'Inline image (`data:` URI).'),
];

export function normalizeSerpOrganic(row: Row, ctx: TransformContext, opts: PresetOptions): Row[] {
  const page = serpPageContext(row, ctx);
  // A decoder that already split the page at `organic` hands us one result per row.
  const single = !isSerpPage(row);
  const items: OrganicItem[] = !single ? mergedOrganic(row) : 'link' in row ? [{ item: row, list: 'organic' }] : [];
  return items.map(({ item, list }, i) => {
    const rank = single ? toInteger(item.rank) : i + 1;
    const out: Row = {
      query: page.query,
      page: page.page,
      start: page.start,
      rank,
      position: page.start !== null && rank !== null ? page.start + rank : null,
      global_rank: toInteger(item.global_rank),
      source_rank: toInteger(item.rank),
      source_list: list,
      link: toText(item.link),
      title: toText(item.title),
      description: toText(item.description),
      source: toText(item.source),
      display_link: toText(item.display_link),
      extensions: extensions(item.extensions),
      snippet_highlighted_words: toTextList(item.snippet_highlighted_words),
      has_icon: nonEmpty(item.icon),
      has_image: nonEmpty(item.image) || nonEmpty(item.image_base64) || nonEmpty(item.image_url),
      image_url: urlOrNull(item.image_url) ?? urlOrNull(item.image),
      image_alt: toText(item.image_alt),
      duration: toText(item.duration),
      duration_sec: toInteger(item.duration_sec),
      fid: toText(item.fid),
      address: toText(item.address),
      phone: toText(item.phone),
      category: titles(item.category),
      tags: tags(item.tags),
      summary: toText(item.summary),
      rating: toNumber(item.rating),
      reviews_cnt: toInteger(item.reviews_cnt),
      latitude: toNumber(item.latitude),
      longitude: toNumber(item.longitude),
      claimed: toBool(item.claimed),
      map_link: toText(item.map_link),
      request_id: page.request_id,
      fetched_at: page.fetched_at,
    };
    if (opts.keepImageData) {
      out.icon = toText(item.icon);
      out.image = toText(item.image);
      out.image_base64 = toText(item.image_base64);
    }
    return out;
  });
}

/** Every element with the same keys, so the column is one stable LIST(STRUCT). */
function extensions(v: unknown): Row[] | null {
  if (!Array.isArray(v)) return null;
  return v.filter(isPlainObject).map((e) => ({
    type: toText(e.type),
    text: toText(e.text),
    link: toText(e.link),
    inline: toBool(e.inline),
    extended: toBool(e.extended),
    rank: toInteger(e.rank),
  }));
}

/** Maps categories are objects (`{id, title}`) or plain text: their titles. */
function titles(v: unknown): string[] | null {
  if (!Array.isArray(v)) return null;
  const out: string[] = [];
  for (const e of v) {
    const t = isPlainObject(e) ? toText(e.title) : toText(e);
    if (t !== null) out.push(t);
  }
  return out;
}

/** Maps tags (`{group_id, group_title, key_id, value_title}`): the group's and the value's titles. */
function tags(v: unknown): Row[] | null {
  if (!Array.isArray(v)) return null;
  return v.filter(isPlainObject).map((t) => ({ group: toText(t.group_title), value: toText(t.value_title) }));
}
