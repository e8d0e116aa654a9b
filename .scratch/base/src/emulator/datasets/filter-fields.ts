/**
 * What a filter's `name` refers to. `field` is a top-level field; `field:value` the elements of an array of
 * scalars; `field:subfield` a member of an object, or that member across all elements of an array of objects.
 * A resolved field yields its non-null candidate values for a record: one for a scalar, any number for arrays.
 */
import type { DatasetFields, ScalarType, SubfieldSpec } from '../data/dataset-fields.js';

type Rec = Record<string, unknown>;

export interface ResolvedField {
  name: string;
  /** `scalar`: one value; `multi`: a list of scalars; `object` / `objects`: a whole object, or an array of them. */
  shape: 'scalar' | 'multi' | 'object' | 'objects';
  /** Type of the candidate values (`object` for the last two shapes). */
  type: ScalarType | 'object';
  /** Non-null candidates in the record (`object` shapes: the value itself when present). */
  candidates(rec: Rec): unknown[];
  /** For `array:subfield` names: the array, so `combine_nested_fields` can bind sub-filters to one element. */
  elements?: { array: string; candidates(element: unknown): unknown[] };
}

/** Undefined when the dataset has no such field. */
export function resolveField(fields: DatasetFields, name: string): ResolvedField | undefined {
  const colon = name.indexOf(':');
  const base = colon < 0 ? name : name.slice(0, colon);
  const sub = colon < 0 ? undefined : name.slice(colon + 1);
  const spec = Object.hasOwn(fields, base) ? fields[base] : undefined;
  if (!spec) return undefined;

  if (sub === undefined) {
    if (spec.type === 'object') return { name, shape: 'object', type: 'object', candidates: (r) => present(r[base]) };
    if (spec.type === 'array') {
      if (spec.items) return { name, shape: 'multi', type: spec.items, candidates: (r) => flat(r[base]) };
      return { name, shape: 'objects', type: 'object', candidates: (r) => nonEmpty(r[base]) };
    }
    return { name, shape: 'scalar', type: spec.type, candidates: (r) => present(r[base]) };
  }

  if (spec.type === 'array' && spec.items && sub === 'value')
    return { name, shape: 'multi', type: spec.items, candidates: (r) => flat(r[base]) };
  const subSpec: SubfieldSpec | undefined =
    (spec.type === 'array' || spec.type === 'object') && spec.fields && Object.hasOwn(spec.fields, sub)
      ? spec.fields[sub]
      : undefined;
  if (subSpec === undefined) return undefined;
  const type = typeof subSpec === 'string' ? subSpec : subSpec.array;
  const ofElement = (e: unknown): unknown[] => (e !== null && typeof e === 'object' ? flat((e as Rec)[sub]) : []);

  if (spec.type === 'object')
    return {
      name,
      shape: typeof subSpec === 'string' ? 'scalar' : 'multi',
      type,
      candidates: (r) => ofElement(r[base]),
    };
  return {
    name,
    shape: 'multi',
    type,
    candidates: (r) => {
      const arr = r[base];
      if (!Array.isArray(arr)) return [];
      const out: unknown[] = [];
      for (const e of arr) for (const c of ofElement(e)) out.push(c);
      return out;
    },
    elements: { array: base, candidates: ofElement },
  };
}

function present(v: unknown): unknown[] {
  return v === null || v === undefined ? [] : [v];
}

/** A value or the non-null elements of an array value. */
function flat(v: unknown): unknown[] {
  if (v === null || v === undefined) return [];
  if (!Array.isArray(v)) return [v];
  return v.filter((e) => e !== null && e !== undefined);
}

function nonEmpty(v: unknown): unknown[] {
  return Array.isArray(v) ? (v.length > 0 ? [v] : []) : present(v);
}
