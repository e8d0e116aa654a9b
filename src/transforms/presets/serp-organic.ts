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
import { isPlainObject, nonEmpty, toBool, toInteger, toText, toTextList, urlOrNull } from '../coerce.js';
import type { PresetOptions } from './preset.js';
import { isSerpPage, mergedOrganic, serpPageContext, type OrganicItem } from './serp-page.js';

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
