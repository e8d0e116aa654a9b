/**
 * `serp_images`: one row per image result of a search page, with the optional `recipe` card flattened into
 * `recipe_*` columns (null when the image has no recipe). Inline `data:` images are dropped unless
 * `keep_image_data` is set; `has_image` still says whether the result had one.
 */
import type { Row, TransformContext } from '../../core/types.js';
import { asObject, isPlainObject, nonEmpty, toInteger, toNumber, toText, toTextList, urlOrNull } from '../coerce.js';
import type { PresetOptions } from './preset.js';
import { serpPageContext } from './serp-page.js';

export function normalizeSerpImages(row: Row, ctx: TransformContext, opts: PresetOptions): Row[] {
  if (!Array.isArray(row.images)) return [];
  const page = serpPageContext(row, ctx);
  const out: Row[] = [];
  for (const item of row.images) {
    if (!isPlainObject(item)) continue;
    const recipe = asObject(item.recipe);
    const r: Row = {
      query: page.query,
      page: page.page,
      start: page.start,
      rank: toInteger(item.rank),
      global_rank: toInteger(item.global_rank),
      link: toText(item.link),
      title: toText(item.title),
      source: toText(item.source),
      original_image: toText(item.original_image),
      image_url: urlOrNull(item.image_url) ?? urlOrNull(item.image),
      image_alt: toText(item.image_alt),
      has_image: nonEmpty(item.image) || nonEmpty(item.image_base64) || nonEmpty(item.image_url),
      source_logo: opts.keepImageData ? toText(item.source_logo) : urlOrNull(item.source_logo),
      has_recipe: recipe !== undefined,
      recipe_rating: toNumber(recipe?.rating),
      recipe_reviews_cnt: toInteger(recipe?.reviews_cnt),
      recipe_title: toText(recipe?.title),
      recipe_ingredients: toTextList(recipe?.ingredients),
      recipe_summary: toText(recipe?.summary),
      recipe_duration: toText(recipe?.duration),
      recipe_duration_sec: toInteger(recipe?.duration_sec),
      recipe_volume: toText(recipe?.volume),
      request_id: page.request_id,
      fetched_at: page.fetched_at,
    };
    if (opts.keepImageData) {
      r.image = toText(item.image);
      r.image_base64 = toText(item.image_base64);
    }
    out.push(r);
  }
  return out;
}
