/**
 * The service's filter vocabulary (docs/service.md §2.2): the field and group operators, which of them take a list (or
 * an uploaded file naming one), which take no value, and how deep groups nest. Shared by the pipeline-side check
 * (src/sources/filter.ts) and the emulator's validation, which word their errors differently.
 */
export const FIELD_OPERATORS = [
  '=',
  '!=',
  '<',
  '<=',
  '>',
  '>=',
  'in',
  'not_in',
  'includes',
  'not_includes',
  'array_includes',
  'not_array_includes',
  'is_null',
  'is_not_null',
] as const;
export const GROUP_OPERATORS = ['and', 'or'] as const;

export type FieldOperator = (typeof FIELD_OPERATORS)[number];
export type GroupOperator = (typeof GROUP_OPERATORS)[number];

/** Operators whose value is a list, or the name of an uploaded file holding one (spec "Filter object"). */
export const LIST_OPERATORS: ReadonlySet<string> = new Set<FieldOperator>([
  'in',
  'not_in',
  'includes',
  'not_includes',
  'array_includes',
  'not_array_includes',
]);
/** Operators that take no value. */
export const VALUELESS_OPERATORS: ReadonlySet<string> = new Set<FieldOperator>(['is_null', 'is_not_null']);

/** Groups nest at most this deep; the outermost group is level 1. */
export const MAX_GROUP_DEPTH = 3;
