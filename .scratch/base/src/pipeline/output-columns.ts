/**
 * The columns the rows reaching a sink have, where the pipeline's transforms fix them statically; undefined where
 * they do not. Used to check merge keys (`primary_key`) when the pipeline is validated, before any request is made.
 *
 * Sound by construction: a column set is known only from a transform that fixes it — `select` (not `exclude`), or
 * a `normalize` preset whose rows are object literals with one key set (every preset but `company_profile`, which
 * types the record it is given and keeps its fields) — and then carried through the transforms whose effect on
 * the key set follows from their config alone (`select` with `exclude`, `rename`, `cast`, `filter`, `dedupe`).
 * Anything else (`flatten`, whose columns depend on the data; a source's own rows) makes the set unknown, and an
 * unknown set is never reported against.
 */
import type { Row, TransformContext } from '../core/types.js';
import { PRESETS, type PresetName } from '../transforms/normalize.js';
import type { ComponentConfig } from './schema.js';

/**
 * One input row per preset that yields at least one output row. The presets build each row as one object literal
 * (optional image payloads aside, which `keep_image_data` decides), so the keys of one row are the keys of all.
 */
const PRESET_PROBES: Partial<Record<PresetName, Row>> = {
  serp_organic: { organic: [{ link: 'https://example.com/', title: 'probe' }] },
  serp_related: { related: [{ text: 'probe' }] },
  serp_images: { images: [{ link: 'https://example.com/' }] },
  serp_pages: { general: {} },
  reviews: { reviews: [{ review_id: 'probe' }] },
};

const PROBE_CONTEXT: TransformContext = {
  log: { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined },
  deadLetter: () => undefined,
  unitId: 'probe',
  unitParams: {},
};

/** The columns a `normalize` preset outputs, or undefined when they depend on the input (`company_profile`). */
export function presetColumns(preset: string, keepImageData = false): string[] | undefined {
  const probe = PRESET_PROBES[preset as PresetName];
  if (!probe) return undefined;
  const rows = PRESETS[preset as PresetName](structuredClone(probe), PROBE_CONTEXT, { keepImageData });
  return rows[0] ? Object.keys(rows[0]) : undefined;
}

export interface KnownColumns {
  columns: string[];
  /** Which transform fixed them, for messages: `transforms[2] (normalize serp_organic)`. */
  from: string;
}

/** The columns after the whole transform chain, or undefined when they cannot be known without the data. */
export function outputColumns(transforms: readonly ComponentConfig[]): KnownColumns | undefined {
  let known: KnownColumns | undefined;
  transforms.forEach((t, i) => {
    const at = `transforms[${i}] (${t.type}${t.type === 'normalize' ? ` ${String(t.preset)}` : ''})`;
    known = step(t, at, known);
  });
  return known;
}

function step(t: ComponentConfig, at: string, known: KnownColumns | undefined): KnownColumns | undefined {
  switch (t.type) {
    case 'normalize': {
      const columns = presetColumns(String(t.preset), t.keep_image_data === true);
      return columns && { columns, from: at };
    }
    case 'select': {
      const fields = t.fields as string[];
      if (t.exclude !== true) return { columns: [...new Set(fields)], from: at };
      return known && { ...known, columns: known.columns.filter((c) => !fields.includes(c)) };
    }
    case 'rename': {
      if (!known) return undefined;
      const map = t.fields as Record<string, string>;
      // A renamed field replaces one of the new name; a field the rows lack is skipped.
      const renamed = known.columns.filter((c) => c in map).map((c) => map[c]!);
      const kept = known.columns.filter((c) => !(c in map) && !renamed.includes(c));
      return { ...known, columns: [...kept, ...renamed] };
    }
    case 'cast':
    case 'filter':
    case 'dedupe':
      return known;
    default:
      return undefined;
  }
}
