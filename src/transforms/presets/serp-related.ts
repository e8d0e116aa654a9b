/**
 * `serp_related`: one row per related search of a page.
 *
 * An entry of `related` is either a plain search (text, link) or a group (a carousel) holding `items`, which can
 * nest again. Every entry with a text or a link becomes a row; groups are walked depth first. `rank` and
 * `global_rank` are those of the top-level entry the row belongs to, `item_rank` the row's own rank inside its
 * group (null at the top level) and `depth` how deep it sits (0 = top level).
 */
import type { Row, TransformContext } from '../../core/types.js';
import { column, type DeclaredSchema } from '../../core/declared.js';
import { BIGINT, BOOLEAN, VARCHAR } from '../../core/logical-type.js';
import { isPlainObject, nonEmpty, toBool, toInteger, toText, urlOrNull } from '../coerce.js';
import type { PresetOptions } from './preset.js';
import { FETCH_COLUMNS, PAGE_COLUMNS, serpPageContext, type SerpPageContext } from './serp-page.js';

/** Every row has exactly these keys, in this order (plus `SERP_RELATED_IMAGE_DATA_COLUMNS` with `keep_image_data`). */
export const SERP_RELATED_COLUMNS: DeclaredSchema = [
  ...PAGE_COLUMNS,
  column('rank', BIGINT, 'Rank of the top-level entry the search belongs to.', false),
  column('global_rank', BIGINT, "The service's position of that entry across every result block of the page."),
  column('item_rank', BIGINT, 'Rank inside its group (null at the top level).'),
  column('depth', BIGINT, 'How deep in groups it sits: 0 = top level.', false),
  column('text', VARCHAR, 'The related search.'),
  column('link', VARCHAR, 'Search URL of the related search.'),
  column('expanded', BOOLEAN, 'The engine showed the entry expanded.'),
  column('has_image', BOOLEAN, 'The entry had an image (URL or inline data).', false),
  column('image_url', VARCHAR, 'Image URL (inline `data:` images are not URLs: null).'),
  ...FETCH_COLUMNS,
];

/** `keep_image_data: true` adds these, after the others. */
export const SERP_RELATED_IMAGE_DATA_COLUMNS: DeclaredSchema = [
  column('image', VARCHAR, 'Inline image (`data:` URI) or image URL.'),
];

/** Deeper nesting than this is not a related-search shape; stop rather than recurse without bound. */
const MAX_DEPTH = 8;

export function normalizeSerpRelated(row: Row, ctx: TransformContext, opts: PresetOptions): Row[] {
  if (!Array.isArray(row.related)) return [];
  const page = serpPageContext(row, ctx);
  const out: Row[] = [];
  row.related.forEach((entry, i) => {
    if (!isPlainObject(entry)) return;
    const top = { rank: toInteger(entry.rank) ?? i + 1, global_rank: toInteger(entry.global_rank) };
    walk(entry, 0, top, page, opts, out);
  });
  return out;
}

function walk(
  entry: Record<string, unknown>,
  depth: number,
  top: { rank: number; global_rank: number | null },
  page: SerpPageContext,
  opts: PresetOptions,
  out: Row[],
): void {
  if (nonEmpty(entry.text) || nonEmpty(entry.link)) {
    const r: Row = {
      query: page.query,
      page: page.page,
      start: page.start,
      rank: top.rank,
      global_rank: top.global_rank,
      item_rank: depth === 0 ? null : toInteger(entry.rank),
      depth,
      text: toText(entry.text),
      link: toText(entry.link),
      expanded: toBool(entry.expanded),
      has_image: nonEmpty(entry.image) || nonEmpty(entry.image_url),
      image_url: urlOrNull(entry.image_url) ?? urlOrNull(entry.image),
      request_id: page.request_id,
      fetched_at: page.fetched_at,
    };
    if (opts.keepImageData) r.image = toText(entry.image);
    out.push(r);
  }
  if (depth >= MAX_DEPTH || !Array.isArray(entry.items)) return;
  for (const child of entry.items) if (isPlainObject(child)) walk(child, depth + 1, top, page, opts, out);
}
