/**
 * Finds the zod schema that governs a path of a config value, following the value itself through
 * `type`-discriminated unions, so an error can say which keys are allowed there and what an option is for.
 */
import type { z } from 'zod';
import type { YamlPath } from './interpolate.js';

type Def = {
  type: string;
  innerType?: z.ZodType;
  in?: z.ZodType;
  getter?: () => z.ZodType;
  shape?: Record<string, z.ZodType>;
  element?: z.ZodType;
  valueType?: z.ZodType;
  options?: z.ZodType[];
  discriminator?: string;
  values?: unknown[];
};

const WRAPPERS = new Set(['optional', 'nullable', 'default', 'prefault', 'catch', 'readonly', 'nonoptional']);

function def(schema: z.ZodType): Def {
  return (schema as unknown as { _zod: { def: Def } })._zod.def;
}

/** The schema under optional/default/lazy/pipe wrappers. */
export function unwrap(schema: z.ZodType): z.ZodType {
  let s = schema;
  for (let i = 0; i < 32; i++) {
    const d = def(s);
    if (WRAPPERS.has(d.type) && d.innerType) s = d.innerType;
    else if (d.type === 'pipe' && d.in) s = d.in;
    else if (d.type === 'lazy' && d.getter) s = d.getter();
    else break;
  }
  return s;
}

/** The first description on the way through the wrappers (`.describe()` may sit on any of them). */
export function descriptionOf(schema: z.ZodType): string | undefined {
  let s = schema;
  for (let i = 0; i < 32; i++) {
    const text = (s as { description?: string }).description;
    if (text) return text;
    const d = def(s);
    if (WRAPPERS.has(d.type) && d.innerType) s = d.innerType;
    else if (d.type === 'pipe' && d.in) s = d.in;
    else if (d.type === 'lazy' && d.getter) s = d.getter();
    else return undefined;
  }
  return undefined;
}

export function objectShape(schema: z.ZodType): Record<string, z.ZodType> | undefined {
  const d = def(unwrap(schema));
  return d.type === 'object' ? d.shape : undefined;
}

function literalValues(schema: z.ZodType): unknown[] {
  const d = def(unwrap(schema));
  return d.type === 'literal' ? (d.values ?? []) : [];
}

/** For a discriminated union: the option whose discriminator literal equals the value's. */
function pickOption(d: Def, value: unknown): z.ZodType | undefined {
  const options = d.options ?? [];
  if (d.discriminator !== undefined) {
    const tag = value && typeof value === 'object' ? (value as Record<string, unknown>)[d.discriminator] : undefined;
    return options.find((o) => {
      const field = objectShape(o)?.[d.discriminator!];
      return field !== undefined && literalValues(field).includes(tag);
    });
  }
  // A plain union of objects: the one that knows most of the keys the value has (the first on a tie).
  if (!value || typeof value !== 'object' || Array.isArray(value)) return undefined;
  const keys = Object.keys(value);
  let best: z.ZodType | undefined;
  let bestKnown = -1;
  for (const o of options) {
    const shape = objectShape(o);
    if (!shape) continue;
    const known = keys.filter((k) => k in shape).length;
    if (known > bestKnown) [best, bestKnown] = [o, known];
  }
  return best;
}

/** The schema of `value[seg]` given the schema of `value`. */
export function childSchema(schema: z.ZodType, value: unknown, seg: string | number): z.ZodType | undefined {
  let s = unwrap(schema);
  let d = def(s);
  if (d.type === 'union') {
    const picked = pickOption(d, value);
    if (!picked) return undefined;
    s = unwrap(picked);
    d = def(s);
  }
  if (d.type === 'object') return d.shape?.[String(seg)];
  if (d.type === 'array') return d.element;
  if (d.type === 'record') return d.valueType;
  return undefined;
}

/** The schema at `path` inside `root`, following the data; undefined when the path leaves the schema. */
export function schemaAt(root: z.ZodType, data: unknown, path: YamlPath): z.ZodType | undefined {
  let schema: z.ZodType | undefined = root;
  let value = data;
  for (const seg of path) {
    if (!schema) return undefined;
    schema = childSchema(schema, value, seg);
    value = value && typeof value === 'object' ? (value as Record<string | number, unknown>)[seg] : undefined;
  }
  return schema;
}

/** The object schema that applies to `value` when `schema` is an object or a union of objects. */
export function resolveObject(schema: z.ZodType, value: unknown): Record<string, z.ZodType> | undefined {
  const s = unwrap(schema);
  const d = def(s);
  if (d.type === 'union') {
    const picked = pickOption(d, value);
    return picked ? objectShape(picked) : undefined;
  }
  return objectShape(s);
}
