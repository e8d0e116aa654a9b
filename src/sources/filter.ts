/**
 * The snapshot source's `filter` and `files`, checked before anything is paid for.
 *
 * The grammar (docs/service.md §2.2) is checked when the pipeline loads, so `sluice validate` reports a bad operator or a
 * group nested too deep at its file:line:column instead of the service refusing a filter job at run time. The files
 * are checked when the run plans, before the paid filter call: the service answers a bad file with no more than
 * "Invalid file format", which does not say which file or what is wrong with it.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parse as parseCsv } from 'csv-parse/sync';
import { z } from 'zod';
import { ServiceError } from '../client/index.js';
import { SluiceError } from '../core/errors.js';
import {
  FIELD_OPERATORS,
  GROUP_OPERATORS,
  LIST_OPERATORS,
  MAX_GROUP_DEPTH,
  VALUELESS_OPERATORS,
} from '../core/filter-grammar.js';
import { didYouMean } from '../core/suggest.js';

/** A filter value that looks like this names an uploaded file rather than being a literal. */
const FILE_NAME = /\.(csv|json)$/i;

const FIELD_KEYS = ['name', 'operator', 'value'];
const GROUP_KEYS = ['operator', 'filters', 'combine_nested_fields'];

type Path = (string | number)[];
type Report = (path: Path, message: string, hint: string) => void;

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isScalar(v: unknown): boolean {
  return typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v));
}

/** Every grammar problem of a filter object, each at its path under `filter` (the loader names the option). */
export function checkFilter(value: unknown, report: Report, path: Path = [], level = 1): void {
  if (!isObject(value)) {
    report(
      path,
      'must be a mapping',
      'write a field filter {name, operator, value} or a group {operator: and, filters: [...]}',
    );
    return;
  }
  const isGroup = value.operator === 'and' || value.operator === 'or' || 'filters' in value;
  if (isGroup) checkGroup(value, report, path, level);
  else checkField(value, report, path);
}

function unknownKeys(o: Record<string, unknown>, allowed: string[], kind: string, report: Report, path: Path): void {
  for (const k of Object.keys(o)) {
    if (allowed.includes(k)) continue;
    const guess = didYouMean(k, allowed);
    report(
      [...path, k],
      `unknown key "${k}" in a ${kind}${guess ? ` (did you mean "${guess}"?)` : ''}`,
      `allowed keys in a ${kind}: ${allowed.join(', ')}`,
    );
  }
}

function checkGroup(o: Record<string, unknown>, report: Report, path: Path, level: number): void {
  unknownKeys(o, GROUP_KEYS, 'filter group', report, path);
  if (level > MAX_GROUP_DEPTH) {
    report(
      path,
      `filter groups nest at most ${MAX_GROUP_DEPTH} levels; this group is level ${level}`,
      'flatten the filter: merge this group into its parent when they share the operator, or move conditions up a level',
    );
    return;
  }
  if (!(GROUP_OPERATORS as readonly unknown[]).includes(o.operator))
    report(
      [...path, 'operator'],
      o.operator === undefined
        ? 'a filter group needs an operator'
        : `${JSON.stringify(o.operator)} is not a group operator`,
      `a group's operator is one of: ${GROUP_OPERATORS.join(', ')}`,
    );
  if (o.combine_nested_fields !== undefined && typeof o.combine_nested_fields !== 'boolean')
    report(
      [...path, 'combine_nested_fields'],
      'must be true or false',
      'write `combine_nested_fields: true` or remove it',
    );
  if (!Array.isArray(o.filters) || o.filters.length === 0) {
    report(
      o.filters === undefined ? path : [...path, 'filters'],
      'a filter group needs a non-empty list of `filters`',
      'list the conditions under `filters:`, e.g. `filters: [{ name: followers, operator: ">", value: 100 }]`',
    );
    return;
  }
  o.filters.forEach((child, i) => checkFilter(child, report, [...path, 'filters', i], level + 1));
}

function checkField(o: Record<string, unknown>, report: Report, path: Path): void {
  unknownKeys(o, FIELD_KEYS, 'field filter', report, path);
  if (typeof o.name !== 'string' || o.name.trim() === '')
    report(
      o.name === undefined ? path : [...path, 'name'],
      'a field filter needs `name`: the name of a dataset field',
      'set `name:` to a field of the dataset (`sluice datasets metadata <dataset id>` lists them)',
    );
  const op = o.operator;
  const operators = [...FIELD_OPERATORS, ...GROUP_OPERATORS];
  if (typeof op !== 'string' || !(FIELD_OPERATORS as readonly string[]).includes(op)) {
    const guess = typeof op === 'string' ? didYouMean(op, operators) : undefined;
    report(
      op === undefined ? path : [...path, 'operator'],
      op === undefined
        ? 'a field filter needs an operator'
        : `unknown operator ${JSON.stringify(op)}${guess ? ` (did you mean "${guess}"?)` : ''}`,
      `field operators: ${FIELD_OPERATORS.join(', ')}; group operators: ${GROUP_OPERATORS.join(', ')}`,
    );
    return;
  }
  if (VALUELESS_OPERATORS.has(op)) {
    if ('value' in o)
      report(
        [...path, 'value'],
        `operator ${op} takes no value`,
        `remove \`value\` (${op} tests the field alone), or compare with \`=\` / \`!=\``,
      );
    return;
  }
  if (!('value' in o) || o.value === null) {
    report(path, `operator ${op} needs a value`, 'add `value:` (a string, number or boolean; a list for in/not_in)');
    return;
  }
  const v = o.value;
  if (!isScalar(v) && !(Array.isArray(v) && v.every(isScalar)))
    report(
      [...path, 'value'],
      'must be a string, number, boolean or a list of them',
      'write the value inline, or name a CSV/JSON file listed in `source.files`',
    );
}

/** The file names a filter's values refer to, with the field each one filters. */
export function fileReferences(filter: unknown, path: Path = []): { file: string; field: string; path: Path }[] {
  if (!isObject(filter)) return [];
  if (Array.isArray(filter.filters))
    return filter.filters.flatMap((f, i) => fileReferences(f, [...path, 'filters', i]));
  const { name, operator, value } = filter;
  if (typeof name === 'string' && typeof operator === 'string' && LIST_OPERATORS.has(operator))
    if (typeof value === 'string' && FILE_NAME.test(value))
      return [{ file: value, field: name, path: [...path, 'value'] }];
  return [];
}

/**
 * The `filter` option's schema: any mapping, checked by `checkFilter`, plus `files` cross-checked by the snapshot
 * source's own refinement (`checkFilterFiles`).
 */
export const filterSchema = z
  .record(z.string(), z.unknown())
  .superRefine((f, ctx) =>
    checkFilter(f, (path, message, hint) => ctx.addIssue({ code: 'custom', path, message, params: { hint } })),
  );

/** A filter value naming a file that `files` does not upload: the service would answer "File not found". */
export function checkFilterFiles(
  cfg: { filter?: Record<string, unknown> | undefined; files?: string[] | undefined },
  ctx: z.RefinementCtx,
): void {
  const uploaded = new Set((cfg.files ?? []).map((f) => path.basename(f)));
  for (const ref of fileReferences(cfg.filter)) {
    if (uploaded.has(ref.file)) continue;
    ctx.addIssue({
      code: 'custom',
      path: ['filter', ...ref.path],
      message: `"${ref.file}" names a file that source.files does not upload`,
      params: {
        hint: `add the file to \`files:\` (its path relative to the pipeline file, e.g. files: [filters/${ref.file}]); the filter value is its file name`,
      },
    });
  }
}

export interface FilterFile {
  name: string;
  content: Buffer;
}

/**
 * Reads `files` for upload and checks each one a filter value refers to the way the service will: a CSV's header
 * is the field name, a JSON file is an array of objects holding the field. Throws a SluiceError naming the file.
 */
export async function readFilterFiles(files: string[], filter: unknown, baseDir: string): Promise<FilterFile[]> {
  const out: FilterFile[] = [];
  for (const f of files) {
    const full = path.resolve(baseDir, f);
    let content: Buffer;
    try {
      content = await readFile(full);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      throw new SluiceError(
        `source.files: cannot read ${full} (${code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a directory' : (code ?? (err as Error).message)})`,
        {
          hint: 'paths in source.files are relative to the pipeline file: fix the path or create the file',
          cause: err,
        },
      );
    }
    out.push({ name: path.basename(f), content });
  }
  for (const ref of fileReferences(filter)) {
    const file = out.find((f) => f.name === ref.file);
    if (!file) continue; // the loader reported it already
    const problem = /\.json$/i.test(file.name) ? jsonProblem(file, ref.field) : csvProblem(file, ref.field);
    if (problem)
      throw new SluiceError(`source.files: ${file.name} is not a valid filter file: ${problem}`, {
        hint:
          `filter files are a CSV whose first line is the field name ("${ref.field}") and then one value per line, ` +
          `or a JSON array of objects like [{"${ref.field}": "…"}]`,
      });
  }
  return out;
}

/** `field` or, for `field:subfield` names, the part before the colon. */
function acceptedKeys(field: string): string[] {
  const colon = field.indexOf(':');
  return colon < 0 ? [field] : [field, field.slice(0, colon)];
}

function csvProblem(file: FilterFile, field: string): string | undefined {
  let rows: string[][];
  try {
    rows = parseCsv(file.content, { bom: true, skip_empty_lines: true, trim: true, relax_column_count: true });
  } catch (err) {
    return `it is not valid CSV (${(err as Error).message.split('\n')[0]})`;
  }
  const header = rows[0];
  const accepted = acceptedKeys(field);
  if (!header) return `it is empty; its first line must be the header "${field}"`;
  if (header.length !== 1 || !accepted.includes(header[0]!))
    return `its header is "${header.join(',')}", but the filter field is "${field}"`;
  const wide = rows.findIndex((r) => r.length !== 1);
  if (wide > 0) return `line ${wide + 1} has ${rows[wide]!.length} columns; write one value per line`;
  return undefined;
}

function jsonProblem(file: FilterFile, field: string): string | undefined {
  let data: unknown;
  try {
    data = JSON.parse(file.content.toString('utf8').replace(/^\uFEFF/, ''));
  } catch (err) {
    return `it is not valid JSON (${(err as Error).message})`;
  }
  if (!Array.isArray(data))
    return `it holds ${data === null ? 'null' : `a JSON ${typeof data}`}, not an array of objects`;
  const accepted = acceptedKeys(field);
  for (let i = 0; i < data.length; i++) {
    const item: unknown = data[i];
    if (!isObject(item)) return `item ${i} is not an object; the file must be an array of objects`;
    if (!accepted.some((k) => Object.hasOwn(item, k))) return `item ${i} has no key "${field}"`;
  }
  return undefined;
}

/** The field names a filter's conditions test, in order (`field:subfield` as written). */
export function filterFieldNames(filter: unknown): string[] {
  if (!isObject(filter)) return [];
  if (Array.isArray(filter.filters)) return filter.filters.flatMap(filterFieldNames);
  return typeof filter.name === 'string' ? [filter.name] : [];
}

/**
 * The 422 a filter call gets when the service knows up front that it matches nothing (docs/service.md §2.3): an
 * empty result — nothing was started, nothing is charged — not a failure.
 */
export function matchesNothing(err: unknown): err is ServiceError {
  return err instanceof ServiceError && err.status === 422 && /did not match|no records/i.test(err.serviceMessage);
}

/**
 * The service's 400 to a filter job says what it disliked in its own words; point at the options that produce the
 * request. `knownFields`: the dataset's fields when its metadata answered (most datasets publish none), for a
 * guess at a mistyped name. Other errors pass through unchanged.
 */
export function filterRefusal(err: unknown, datasetId: string, knownFields?: string[]): unknown {
  if (!(err instanceof ServiceError) || err.status !== 400) return err;
  const said = [err.serviceMessage, ...err.details].filter(Boolean).join('; ');
  const field = /field not found/i.test(said);
  return new SluiceError(`the service refused the filter job on ${datasetId}: ${said}`, {
    hint: field
      ? fieldHint(said, datasetId, knownFields)
      : /file/i.test(said)
        ? 'fix source.filter and source.files: a filter value names an uploaded file by its file name'
        : 'fix source.filter (or records_limit) as the service says; `sluice validate` checks the filter grammar',
    cause: err,
  });
}

function fieldHint(said: string, datasetId: string, knownFields: string[] | undefined): string {
  if (knownFields === undefined)
    return (
      'fix the field name in source.filter: the service publishes field lists for some datasets only ' +
      `(\`sluice datasets metadata ${datasetId}\`); the records of one of its snapshots show the fields otherwise`
    );
  const named = /"([^"]+)"/.exec(said)?.[1];
  const guess = named === undefined ? undefined : didYouMean(named.split(':')[0]!, knownFields);
  return `fix the field name in source.filter${guess ? ` (did you mean "${guess}"?)` : ''}: \`sluice datasets metadata ${datasetId}\` lists the dataset's fields`;
}

/** Levels of groups in a filter: 0 for a field filter, 1 for a group of field filters, and so on. */
export function filterDepth(filter: unknown): number {
  if (!isObject(filter) || !Array.isArray(filter.filters)) return 0;
  return 1 + Math.max(0, ...filter.filters.map(filterDepth));
}

/**
 * The filter with the incremental cursor's condition `<cursor> > <after>` (and `<cursor> <= <upTo>` for a
 * backfill's window) added under `and`: into the user's `and` group when the top level is one (no deeper), else
 * all under a new `and` group. Undefined when that new group would nest deeper than the service allows
 * (`cursorFits` reports it when the pipeline loads).
 */
export function withCursor(
  filter: Record<string, unknown> | undefined,
  cursor: string,
  after: string | number,
  upTo?: string | number,
): Record<string, unknown> | undefined {
  const conditions: Record<string, unknown>[] = [
    { name: cursor, operator: '>', value: after },
    ...(upTo !== undefined ? [{ name: cursor, operator: '<=', value: upTo }] : []),
  ];
  if (filter === undefined) return conditions.length === 1 ? conditions[0] : { operator: 'and', filters: conditions };
  if (filter.operator === 'and' && Array.isArray(filter.filters))
    return { ...filter, filters: [...(filter.filters as unknown[]), ...conditions] };
  if (filterDepth(filter) + 1 > MAX_GROUP_DEPTH) return undefined;
  return { operator: 'and', filters: [filter, ...conditions] };
}

/** Refinement: the incremental cursor's condition fits in the filter within the service's nesting limit. */
export function checkCursorFits(
  cfg: { filter?: Record<string, unknown> | undefined; incremental?: { cursor: string } | undefined },
  ctx: z.RefinementCtx,
): void {
  if (cfg.incremental === undefined || withCursor(cfg.filter, cfg.incremental.cursor, 0) !== undefined) return;
  ctx.addIssue({
    code: 'custom',
    path: ['incremental'],
    message: `the cursor's condition (${cfg.incremental.cursor} > last value) cannot be added: the filter's groups already nest ${MAX_GROUP_DEPTH} levels, the service's limit`,
    params: {
      hint: 'make the top-level group of source.filter an `and` group (the condition joins it), or flatten the filter by one level',
    },
  });
}
