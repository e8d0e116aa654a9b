/**
 * `serp_images`: one row per image result of a search page, with the optional `recipe` card flattened into
 * `recipe_*` columns (null when the image has no recipe). Inline `data:` images are dropped unless
 * `keep_image_data` is set; `has_image` still says whether the result had one.
 */
import type { Row, TransformContext } from '../../core/types.js';
import { column, type DeclaredSchema } from '../../core/declared.js';
import { BIGINT, BOOLEAN, DOUBLE, VARCHAR, listOf } from '../../core/logical-type.js';
import { asObject, isPlainObject, nonEmpty, toInteger, toNumber, toText, toTextList, urlOrNull } from '../coerce.js';
import type { PresetOptions } from './preset.js';
import { FETCH_COLUMNS, PAGE_COLUMNS, serpPageContext } from './serp-page.js';

/** Every row has exactly these keys, in this order (plus `SERP_IMAGES_IMAGE_DATA_COLUMNS` with `keep_image_data`). */
export const SERP_IMAGES_COLUMNS: DeclaredSchema = [
  ...PAGE_COLUMNS,
  column('rank', BIGINT, "Position in the page's image list."),
  column('global_rank', BIGINT, "The service's position across every result block of the page."),
  column('link', VARCHAR, 'Page the image is on.'),
  column('title', VARCHAR, 'Image title.'),
  column('source', VARCHAR, 'Site the image is from.'),
  column('original_image', VARCHAR, 'URL of the full-size image.'),
  column('image_url', VARCHAR, 'Thumbnail URL (inline `data:` images are not URLs: null).'),
  column('image_alt', VARCHAR, 'Alt text of the image.'),
  column('has_image', BOOLEAN, 'The result had an image (URL or inline data).', false),
  column('source_logo', VARCHAR, 'Logo URL of the source (inline data only with `keep_image_data`).'),
  column('has_recipe', BOOLEAN, 'The image has a recipe card; the `recipe_*` columns are null otherwise.', false),
  column('recipe_rating', DOUBLE, 'Recipe rating.'),
  column('recipe_reviews_cnt', BIGINT, 'Number of recipe reviews.'),
  column('recipe_title', VARCHAR, 'Recipe title.'),
  column('recipe_ingredients', listOf(VARCHAR), 'Recipe ingredients.'),
  column('recipe_summary', VARCHAR, 'Recipe summary.'),
  column('recipe_duration', VARCHAR, 'Recipe duration as shown.'),
  column('recipe_duration_sec', BIGINT, 'Recipe duration in seconds.'),
  column('recipe_volume', VARCHAR, 'Recipe volume (servings) as shown.'),
  ...FETCH_COLUMNS,
];

/** `keep_image_data: true` adds these, after the others. */
export const SERP_IMAGES_IMAGE_DATA_COLUMNS: DeclaredSchema = [
  column('image', VARCHAR, 'Inline image (`data:` URI) or image URL.'),
  column('image_base64', VARCHAR, 'Inline image (`data:` URI).'),
];

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
