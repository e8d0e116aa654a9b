/**
 * The filter object's grammar, checked the way the service's Joi schema checks it (docs/service.md §2.2–2.3): every
 * problem is reported, each as `"<path>" <reason>` with paths like `filter.filters[0].value`; unknown keys are
 * rejected (`"filter.filters[0].x" is not allowed`); groups nest at most 3 levels. Whether a field exists and
 * whether an operator suits its type needs the dataset: that is filter-compile.ts.
 */
import {
  FIELD_OPERATORS,
  GROUP_OPERATORS,
  MAX_GROUP_DEPTH,
  VALUELESS_OPERATORS,
  type FieldOperator,
  type GroupOperator,
} from '../../core/filter-grammar.js';

export type Scalar = string | number | boolean;
export type FilterValue = Scalar | Scalar[];

export interface FieldFilter {
  kind: 'field';
  /** Joi-style path of this filter, e.g. `filter.filters[1]`. */
  path: string;
  name: string;
  operator: FieldOperator;
  value?: FilterValue;
}

export interface GroupFilter {
  kind: 'group';
  path: string;
  operator: GroupOperator;
  filters: FilterNode[];
  combineNestedFields: boolean;
}

export type FilterNode = FieldFilter | GroupFilter;

const OPERATOR_LIST = `[${[...FIELD_OPERATORS, ...GROUP_OPERATORS].join(', ')}]`;

/** The parsed filter, or the list of everything wrong with it. */
export function validateFilter(value: unknown, path = 'filter'): { filter?: FilterNode; errors: string[] } {
  const errors: string[] = [];
  const filter = node(value, path, 1, errors);
  return errors.length === 0 && filter ? { filter, errors } : { errors };
}

function node(value: unknown, path: string, level: number, errors: string[]): FilterNode | undefined {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    errors.push(`"${path}" must be of type object`);
    return undefined;
  }
  const o = value as Record<string, unknown>;
  const op = o.operator;
  const isGroup = op === 'and' || op === 'or' || 'filters' in o;
  return isGroup ? group(o, path, level, errors) : field(o, path, errors);
}

function group(o: Record<string, unknown>, path: string, level: number, errors: string[]): GroupFilter | undefined {
  const start = errors.length;
  unknownKeys(o, ['operator', 'filters', 'combine_nested_fields'], path, errors);
  if (level > MAX_GROUP_DEPTH)
    errors.push(`"${path}" nests groups ${level} levels deep; filter groups nest at most ${MAX_GROUP_DEPTH} levels`);
  if (o.operator === undefined) errors.push(`"${path}.operator" is required`);
  else if (!(GROUP_OPERATORS as readonly unknown[]).includes(o.operator))
    errors.push(`"${path}.operator" must be one of [${GROUP_OPERATORS.join(', ')}]`);
  const combine = o.combine_nested_fields;
  if (combine !== undefined && typeof combine !== 'boolean')
    errors.push(`"${path}.combine_nested_fields" must be a boolean`);
  const filters: FilterNode[] = [];
  if (o.filters === undefined) errors.push(`"${path}.filters" is required`);
  else if (!Array.isArray(o.filters)) errors.push(`"${path}.filters" must be an array`);
  else if (o.filters.length === 0) errors.push(`"${path}.filters" must contain at least 1 items`);
  else
    o.filters.forEach((child, i) => {
      const n = node(child, `${path}.filters[${i}]`, level + 1, errors);
      if (n) filters.push(n);
    });
  if (errors.length > start) return undefined;
  return {
    kind: 'group',
    path,
    operator: o.operator as GroupOperator,
    filters,
    combineNestedFields: combine === true,
  };
}

function field(o: Record<string, unknown>, path: string, errors: string[]): FieldFilter | undefined {
  const start = errors.length;
  unknownKeys(o, ['name', 'operator', 'value'], path, errors);
  if (o.name === undefined) errors.push(`"${path}.name" is required`);
  else if (typeof o.name !== 'string') errors.push(`"${path}.name" must be a string`);
  else if (o.name.trim() === '') errors.push(`"${path}.name" is not allowed to be empty`);

  const op = o.operator;
  if (op === undefined) errors.push(`"${path}.operator" is required`);
  else if (typeof op !== 'string' || !(FIELD_OPERATORS as readonly string[]).includes(op))
    errors.push(`"${path}.operator" must be one of ${OPERATOR_LIST}`);

  if (typeof op === 'string' && VALUELESS_OPERATORS.has(op)) {
    if (o.value !== undefined) errors.push(`"${path}.value" is not allowed`);
  } else if (o.value === undefined) errors.push(`"${path}.value" is required`);
  else checkValue(o.value, `${path}.value`, errors);

  if (errors.length > start) return undefined;
  return {
    kind: 'field',
    path,
    name: o.name as string,
    operator: op as FieldOperator,
    ...(o.value !== undefined && { value: o.value as FilterValue }),
  };
}

function checkValue(v: unknown, path: string, errors: string[]): void {
  if (isScalar(v)) return;
  if (!Array.isArray(v)) {
    errors.push(`"${path}" must be one of [string, number, boolean, array]`);
    return;
  }
  v.forEach((item, i) => {
    if (!isScalar(item)) errors.push(`"${path}[${i}]" must be one of [string, number, boolean]`);
  });
}

function isScalar(v: unknown): v is Scalar {
  return typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v));
}

function unknownKeys(o: Record<string, unknown>, allowed: string[], path: string, errors: string[]): void {
  for (const k of Object.keys(o)) if (!allowed.includes(k)) errors.push(`"${path}.${k}" is not allowed`);
}
