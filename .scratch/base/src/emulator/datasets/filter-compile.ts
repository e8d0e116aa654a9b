/**
 * A validated filter + the dataset's fields + the uploaded files → a predicate over records.
 *
 * Semantics (the service documents operators, not edge cases; these are the emulator's, and tests hold them):
 * - A field yields candidates: its value if not null, or the non-null elements of an array (`field:value`,
 *   `array:subfield` across all elements).
 * - `=`, `in`, `<` `<=` `>` `>=`: some candidate compares true. `includes`: some text candidate contains one of
 *   the values as a substring (case-sensitive); non-text candidates must equal one. `array_includes`: some
 *   element equals one of the values.
 * - `!=`, `not_in`, `not_includes`, `not_array_includes` are the exact negations of their positive twins, so a
 *   null field matches `!=`. `is_null`: no candidate (null, absent, empty array); `is_not_null`: its negation.
 * - Values are coerced to the field's type (`"30"` for a number field is 30; dates are ISO 8601 strings or epoch
 *   ms); a value that does not fit is a validation error, as is an operator the field's type does not take.
 * - `combine_nested_fields: true` on an `and` group: its sub-filters on the same array of objects must all hold
 *   within one element of that array.
 *
 * Rejections, in the order they are checked: `Field not found` and file problems (`File not found`,
 * `Invalid file format`) as 400 `{error}` naming the culprit; type and value problems as 400
 * `{validation_errors}` in the Joi wording of filter-validate.ts.
 */
import { LIST_OPERATORS } from '../../core/filter-grammar.js';
import type { DatasetFields, ScalarType } from '../data/dataset-fields.js';
import { HttpError } from '../router.js';
import { resolveField, type ResolvedField } from './filter-fields.js';
import { FILE_NAME, fileValues, type UploadedFile } from './filter-files.js';
import type { FieldFilter, FilterNode, GroupFilter, Scalar } from './filter-validate.js';

type Rec = Record<string, unknown>;
export type RecordPredicate = (rec: Rec) => boolean;

interface CompileEnv {
  datasetId: string;
  fields: DatasetFields;
  files: ReadonlyMap<string, UploadedFile>;
  errors: string[];
}

/** A compiled field filter: how to read candidates and how to decide on them. */
interface FieldTest {
  field: ResolvedField;
  decide(candidates: unknown[]): boolean;
}

export function compileFilter(
  filter: FilterNode,
  dataset: { id: string; fields: DatasetFields },
  files: ReadonlyMap<string, UploadedFile>,
): RecordPredicate {
  const env: CompileEnv = { datasetId: dataset.id, fields: dataset.fields, files, errors: [] };
  const predicate = compileNode(filter, env);
  if (env.errors.length > 0) throw new HttpError(400, { validation_errors: env.errors });
  return predicate;
}

function compileNode(node: FilterNode, env: CompileEnv): RecordPredicate {
  if (node.kind === 'group') return compileGroup(node, env);
  const t = compileField(node, env);
  return (rec) => t.decide(t.field.candidates(rec));
}

function compileGroup(g: GroupFilter, env: CompileEnv): RecordPredicate {
  if (g.operator === 'or') {
    const parts = g.filters.map((f) => compileNode(f, env));
    return (rec) => parts.some((p) => p(rec));
  }
  if (!g.combineNestedFields) {
    const parts = g.filters.map((f) => compileNode(f, env));
    return (rec) => parts.every((p) => p(rec));
  }
  // Sub-filters on `array:subfield` names are bound per array; the rest are tested on the record as usual.
  const loose: RecordPredicate[] = [];
  const bound = new Map<string, FieldTest[]>();
  for (const f of g.filters) {
    if (f.kind === 'field') {
      const t = compileField(f, env);
      const array = t.field.elements?.array;
      if (array !== undefined) {
        bound.set(array, [...(bound.get(array) ?? []), t]);
        continue;
      }
      loose.push((rec) => t.decide(t.field.candidates(rec)));
    } else loose.push(compileNode(f, env));
  }
  const groups = [...bound.entries()];
  return (rec) => {
    for (const p of loose) if (!p(rec)) return false;
    for (const [array, tests] of groups) {
      const elements = rec[array];
      if (!Array.isArray(elements)) return false;
      const one = elements.some((e) => tests.every((t) => t.decide(t.field.elements!.candidates(e))));
      if (!one) return false;
    }
    return true;
  };
}

function compileField(f: FieldFilter, env: CompileEnv): FieldTest {
  const field = resolveField(env.fields, f.name);
  if (!field)
    throw new HttpError(400, {
      error: `Field not found: "${f.name}" (${f.path}.name) is not a field of dataset ${env.datasetId}; see GET /datasets/${env.datasetId}/metadata`,
    });
  const never: FieldTest = { field, decide: () => false };
  const op = f.operator;

  if (op === 'is_null' || op === 'is_not_null') {
    const wantNull = op === 'is_null';
    return { field, decide: (c) => (c.length === 0) === wantNull };
  }
  if (field.shape === 'object' || field.shape === 'objects') {
    const subs = Object.keys((env.fields[f.name] as { fields?: object }).fields ?? {});
    const sub = subs.find((k) => k === 'title' || k === 'url') ?? subs[0] ?? 'name';
    const what = field.shape === 'object' ? 'an object' : 'an array of objects';
    env.errors.push(
      `"${f.path}.name" "${f.name}" is ${what}: "${op}" needs one of its fields, e.g. "${f.name}:${sub}" (only is_null and is_not_null apply to the whole value)`,
    );
    return never;
  }
  const type = field.type as ScalarType;
  if (!operatorFits(op, field, type)) {
    env.errors.push(`"${f.path}.operator" "${op}" ${OPERATOR_RULE[op]}; "${f.name}" is ${describe(field, type)}`);
    return never;
  }

  const negate = op.startsWith('not_') || op === '!=';
  const positive = negate ? (op === '!=' ? '=' : op.slice(4)) : op;
  const values = operands(f, type, env);
  if (values === undefined) return never;
  const test = candidateTest(positive, type, values);
  const decide = negate
    ? (c: unknown[]) => !c.some(test)
    : (c: unknown[]) => {
        for (const x of c) if (test(x)) return true;
        return false;
      };
  return { field, decide };
}

const OPERATOR_RULE: Record<string, string> = {
  '<': 'applies to number and date fields',
  '<=': 'applies to number and date fields',
  '>': 'applies to number and date fields',
  '>=': 'applies to number and date fields',
  includes: 'applies to text and array fields',
  not_includes: 'applies to text and array fields',
  array_includes: 'applies to array fields',
  not_array_includes: 'applies to array fields',
};

function operatorFits(op: string, field: ResolvedField, type: ScalarType): boolean {
  switch (op) {
    case '<':
    case '<=':
    case '>':
    case '>=':
      return type === 'number' || type === 'date';
    case 'includes':
    case 'not_includes':
      return field.shape === 'multi' || type === 'text' || type === 'url';
    case 'array_includes':
    case 'not_array_includes':
      return field.shape === 'multi';
    default:
      return true;
  }
}

function describe(field: ResolvedField, type: ScalarType): string {
  return field.shape === 'multi' ? `an array of ${type}` : type;
}

/** The filter's value(s) coerced to the field's type; undefined after recording an error. */
function operands(f: FieldFilter, type: ScalarType, env: CompileEnv): unknown[] | undefined {
  const v = f.value as Scalar | Scalar[];
  let raw: Scalar[];
  let from: string;
  if (LIST_OPERATORS.has(f.operator)) {
    if (typeof v === 'string' && (env.files.has(v) || FILE_NAME.test(v))) {
      const file = env.files.get(v);
      if (!file) {
        const uploaded = [...env.files.keys()];
        throw new HttpError(400, {
          error: `File not found: ${f.path}.value names "${v}" but ${uploaded.length ? `the uploaded files are ${uploaded.map((n) => `"${n}"`).join(', ')}` : 'no file was uploaded'}; upload it as files[] with exactly that file name`,
        });
      }
      const got = fileValues(file, f.name);
      if ('error' in got) throw new HttpError(400, { error: got.error });
      raw = got.values;
      from = `file ${file.name}`;
    } else {
      raw = Array.isArray(v) ? v : [v];
      from = `${f.path}.value`;
    }
  } else if (Array.isArray(v)) {
    env.errors.push(`"${f.path}.value" must be one of [string, number, boolean] for operator "${f.operator}"`);
    return undefined;
  } else {
    raw = [v];
    from = `${f.path}.value`;
  }
  const out: unknown[] = [];
  for (let i = 0; i < raw.length; i++) {
    const c = coerce(raw[i] as Scalar, type);
    if (c === undefined) {
      const where = raw.length > 1 || Array.isArray(v) ? `${from}[${i}]` : from;
      env.errors.push(`"${where}" must be a ${TYPE_WORD[type]} for field "${f.name}" (got ${JSON.stringify(raw[i])})`);
      return undefined;
    }
    out.push(c);
  }
  return out;
}

const TYPE_WORD: Record<ScalarType, string> = {
  text: 'string',
  url: 'string',
  number: 'number',
  date: 'valid date',
  boolean: 'boolean',
};

/** The operand in the candidates' terms: numbers, epoch ms for dates, strings, booleans. */
function coerce(v: Scalar, type: ScalarType): unknown {
  switch (type) {
    case 'number': {
      const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : NaN;
      return Number.isFinite(n) ? n : undefined;
    }
    case 'date': {
      const t = typeof v === 'number' ? v : typeof v === 'string' ? Date.parse(v) : NaN;
      return Number.isFinite(t) ? t : undefined;
    }
    case 'boolean':
      if (typeof v === 'boolean') return v;
      if (typeof v === 'string' && /^(true|false)$/i.test(v.trim())) return v.trim().toLowerCase() === 'true';
      return undefined;
    default:
      return String(v);
  }
}

/** The candidate as an operand: numbers stay numbers, dates become epoch ms, text stays text. */
function candidateOf(type: ScalarType): (c: unknown) => unknown {
  if (type === 'number') return (c) => (typeof c === 'number' ? c : Number(c));
  if (type === 'date') return (c) => (typeof c === 'string' ? Date.parse(c) : c);
  if (type === 'text' || type === 'url') return (c) => (typeof c === 'string' ? c : String(c));
  return (c) => c;
}

/** A test of one candidate against the operands, for the positive operators. */
function candidateTest(op: string, type: ScalarType, values: unknown[]): (c: unknown) => boolean {
  const as = candidateOf(type);
  const first = values[0];
  switch (op) {
    case '=':
      return (c) => as(c) === first;
    case '<':
      return (c) => (as(c) as number) < (first as number);
    case '<=':
      return (c) => (as(c) as number) <= (first as number);
    case '>':
      return (c) => (as(c) as number) > (first as number);
    case '>=':
      return (c) => (as(c) as number) >= (first as number);
    case 'includes':
      if (type === 'text' || type === 'url') {
        const needles = values as string[];
        return (c) => {
          const s = as(c) as string;
          for (const n of needles) if (s.includes(n)) return true;
          return false;
        };
      }
      return memberOf(as, values);
    default:
      // in, array_includes
      return memberOf(as, values);
  }
}

function memberOf(as: (c: unknown) => unknown, values: unknown[]): (c: unknown) => boolean {
  const set = new Set(values);
  return (c) => set.has(as(c));
}
