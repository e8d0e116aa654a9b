/**
 * The service's filter vocabulary (docs/service.md §2.2): the field and group operators, which of them take a list (or
 * an uploaded file naming one), which take no value, and how deep groups nest. Shared by the pipeline-side check
 * (src/sources/filter.ts) and the emulator's validation, which word their errors differently.
 */
/**
 * The comparisons, spelled alike in the service's filter and in sluice's `filter` transform (src/transforms/filter.ts),
 * so a user learns one set of spellings; each language adds its own operators around them.
 */
export const COMPARISON_OPERATORS = ['=', '!=', '<', '<=', '>', '>=', 'in', 'not_in'] as const;
/** The null tests, which take no value, in both languages. */
export const NULL_TEST_OPERATORS = ['is_null', 'is_not_null'] as const;

export const FIELD_OPERATORS = [
  ...COMPARISON_OPERATORS,
  'includes',
  'not_includes',
  'array_includes',
  'not_array_includes',
  ...NULL_TEST_OPERATORS,
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
export const VALUELESS_OPERATORS: ReadonlySet<string> = new Set<FieldOperator>(NULL_TEST_OPERATORS);

/** Groups nest at most this deep; the outermost group is level 1. */
export const MAX_GROUP_DEPTH = 3;
