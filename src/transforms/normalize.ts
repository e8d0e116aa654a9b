/**
 * `normalize`: turns the service's payloads into typed rows, by preset. Each preset lives in its own module under
 * presets/; this file only validates the config and dispatches.
 */
import { z } from 'zod';
import type { Batch, Row, Transform, TransformContext } from '../core/types.js';
import type { ComponentDef } from '../contracts/component.js';
import type { DeclaredSchema } from '../core/declared.js';
import { rawRow } from './coerce.js';
import { COMPANY_PROFILE_COLUMNS, normalizeCompanyProfile } from './presets/company-profile.js';
import type { PresetFn, PresetOptions } from './presets/preset.js';
import { REVIEWS_COLUMNS, normalizeReviews } from './presets/reviews.js';
import { SERP_IMAGES_COLUMNS, SERP_IMAGES_IMAGE_DATA_COLUMNS, normalizeSerpImages } from './presets/serp-images.js';
import { SERP_ORGANIC_COLUMNS, SERP_ORGANIC_IMAGE_DATA_COLUMNS, normalizeSerpOrganic } from './presets/serp-organic.js';
import { SERP_PAGES_COLUMNS, normalizeSerpPages } from './presets/serp-pages.js';
import { SERP_RELATED_COLUMNS, SERP_RELATED_IMAGE_DATA_COLUMNS, normalizeSerpRelated } from './presets/serp-related.js';

export const PRESETS = {
  company_profile: normalizeCompanyProfile,
  serp_organic: normalizeSerpOrganic,
  serp_related: normalizeSerpRelated,
  serp_images: normalizeSerpImages,
  serp_pages: normalizeSerpPages,
  reviews: normalizeReviews,
} satisfies Record<string, PresetFn>;

export type PresetName = keyof typeof PRESETS;

/**
 * The columns each preset declares, and those `keep_image_data` adds after them: the one statement of what its rows
 * hold, read by the sinks (typed columns) and by validation (merge keys). `passesUndeclared`: its rows carry the
 * record's other fields too, so the declared columns are only some of theirs.
 */
const PRESET_COLUMNS: Record<
  PresetName,
  { columns: DeclaredSchema; imageData?: DeclaredSchema; passesUndeclared?: true }
> = {
  company_profile: { columns: COMPANY_PROFILE_COLUMNS, passesUndeclared: true },
  serp_organic: { columns: SERP_ORGANIC_COLUMNS, imageData: SERP_ORGANIC_IMAGE_DATA_COLUMNS },
  serp_related: { columns: SERP_RELATED_COLUMNS, imageData: SERP_RELATED_IMAGE_DATA_COLUMNS },
  serp_images: { columns: SERP_IMAGES_COLUMNS, imageData: SERP_IMAGES_IMAGE_DATA_COLUMNS },
  serp_pages: { columns: SERP_PAGES_COLUMNS },
  reviews: { columns: REVIEWS_COLUMNS },
};

/** The columns a preset's rows have (`company_profile` rows may carry more: undeclared fields pass through). */
export function presetDeclared(preset: PresetName, keepImageData = false): DeclaredSchema {
  const { columns, imageData } = PRESET_COLUMNS[preset];
  return keepImageData && imageData ? [...columns, ...imageData] : columns;
}

/** The columns a preset's rows have, all of them, from its declaration; undefined when they carry more. */
export function presetColumns(preset: PresetName, keepImageData = false): string[] | undefined {
  if (PRESET_COLUMNS[preset].passesUndeclared) return undefined;
  return presetDeclared(preset, keepImageData).map((c) => c.name);
}

const PRESETS_WITH_IMAGES: readonly PresetName[] = ['serp_organic', 'serp_related', 'serp_images'];

export const normalizeSchema = z
  .object({
    type: z.literal('normalize'),
    preset: z
      .enum(Object.keys(PRESETS) as [PresetName, ...PresetName[]])
      .describe(
        'What the input rows are and what comes out: `company_profile` (a profile record → the same record typed: ' +
          'timestamps, integer counts, lists of structs), `serp_organic` (a search page → one row per organic ' +
          'result, `organic` and `oragnic` merged and de-duplicated by link), `serp_related` (→ one row per related ' +
          'search), `serp_images` (→ one row per image result, recipe fields flattened), `serp_pages` (→ one row per ' +
          'page from `general`, its other sections as nested columns), `reviews` (a reviews page → one row per review with numeric rating, resolved dates ' +
          'and detail columns).',
      ),
    keep_image_data: z
      .boolean()
      .optional()
      .describe(
        'serp_organic, serp_related, serp_images: also keep inline `data:` image payloads (icons, thumbnails, logos; ' +
          'kilobytes per row). Off by default: image URLs are kept and `has_image` / `has_icon` say what was there.',
      ),
  })
  .strict()
  .superRefine((cfg, ctx) => {
    if (cfg.keep_image_data !== undefined && !PRESETS_WITH_IMAGES.includes(cfg.preset))
      ctx.addIssue({
        code: 'custom',
        path: ['keep_image_data'],
        message: `keep_image_data applies to the presets ${PRESETS_WITH_IMAGES.join(', ')}, not to ${cfg.preset}`,
      });
  });

export type NormalizeConfig = z.infer<typeof normalizeSchema>;

export const normalizeTransform: ComponentDef<'transform', NormalizeConfig, Transform> = {
  kind: 'transform',
  type: 'normalize',
  description: "Typed rows from the service's payloads (SERP pages, review pages, company profiles), by preset.",
  schema: normalizeSchema,
  declares: (config) => presetDeclared(config.preset, config.keep_image_data ?? false),
  outputColumns(config, _input, at) {
    const from = `${at} (normalize ${config.preset})`;
    const keepImageData = config.keep_image_data ?? false;
    const columns = presetColumns(config.preset, keepImageData);
    if (columns) return { columns, from };
    return { columns: presetDeclared(config.preset, keepImageData).map((c) => c.name), from, partial: true };
  },
  create(config) {
    const preset: PresetFn = PRESETS[config.preset];
    const opts: PresetOptions = { keepImageData: config.keep_image_data ?? false };
    const stage = `transform:normalize:${config.preset}`;
    return async function* normalize(batches: AsyncIterable<Batch>, ctx: TransformContext): AsyncIterable<Batch> {
      for await (const batch of batches) {
        const out: Row[] = [];
        for (const row of batch) {
          try {
            for (const r of preset(row, ctx, opts)) out.push(r);
          } catch (err) {
            // Presets read defensively; a throw means a shape nobody anticipated — keep it, keep going.
            ctx.deadLetter({ unit: ctx.unitId, stage, reason: `cannot normalize: ${String(err)}`, raw: rawRow(row) });
          }
        }
        if (out.length > 0) yield out;
      }
    };
  },
};
