/**
 * Zod issues → problems a user can act on: each names the option (`source.download.format`), says what is wrong
 * in words, and says what is allowed there (the allowed keys, values or registered types). Positions are added by
 * the loader, which knows the YAML nodes.
 */
import { z } from 'zod';
import { didYouMean } from '../core/suggest.js';
import type { YamlPath } from './interpolate.js';
import type { ComponentKind, Registry } from './registry.js';
import { descriptionOf, resolveObject, schemaAt, unwrap } from './schema-walk.js';

export interface Problem {
  path: YamlPath;
  /** Report at this key of the mapping at `path` (an unknown option) rather than at the value. */
  key?: string;
  message: string;
  hint?: string;
}

export interface IssueContext {
  schema: z.ZodType;
  data: unknown;
  registry: Registry;
  /**
   * Values that interpolated a variable, by JSON-encoded path, with their text as written (`${PGPW}`): a message
   * shows that, never the variable's value (which may be a secret put in the wrong place).
   */
  interpolated: Map<string, string>;
}

type Issue = z.core.$ZodIssue;

export function formatPath(path: YamlPath): string {
  let out = '';
  for (const seg of path) out += typeof seg === 'number' ? `[${seg}]` : out ? `.${seg}` : seg;
  return out || 'the file';
}

export function valueAt(data: unknown, path: YamlPath): unknown {
  let v = data;
  for (const seg of path) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<string | number, unknown>)[seg];
  }
  return v;
}

function hasKey(data: unknown, path: YamlPath): boolean {
  const parent = valueAt(data, path.slice(0, -1));
  return parent !== null && typeof parent === 'object' && (path.at(-1) as string | number) in parent;
}

/** Where a component's config sits: `source`, `transforms[i]`, `sink`, `sinks[i]`. */
export function componentKindAt(path: YamlPath): ComponentKind | undefined {
  if (path.length === 1 && path[0] === 'source') return 'source';
  if (path.length === 1 && path[0] === 'sink') return 'sink';
  if (path.length === 2 && typeof path[1] === 'number') {
    if (path[0] === 'transforms') return 'transform';
    if (path[0] === 'sinks') return 'sink';
  }
  return undefined;
}

const SENSITIVE = /key|token|secret|password/i;

/** An interpolated value as the file writes it (`` `${PGPW}` ``), shortened; undefined for a value written as is. */
function writtenAs(ctx: IssueContext, path: YamlPath): string | undefined {
  const text = ctx.interpolated.get(JSON.stringify(path));
  return text === undefined ? undefined : `\`${text.length > 60 ? text.slice(0, 60) + '…' : text}\``;
}

function describeValue(ctx: IssueContext, v: unknown, path: YamlPath): string {
  const written = writtenAs(ctx, path);
  const sensitive = SENSITIVE.test(String(path.at(-1) ?? ''));
  const show = (kind: string, text: string): string =>
    written !== undefined ? `${kind} from ${written}` : sensitive ? kind : `${kind} (${text})`;
  if (v === null) return 'an empty value';
  if (Array.isArray(v)) return 'a list';
  switch (typeof v) {
    case 'string':
      return show('a string', JSON.stringify(v.length > 40 ? v.slice(0, 40) + '…' : v));
    case 'number':
      return show('a number', String(v));
    case 'boolean':
      return show('a boolean', String(v));
    case 'object':
      return 'a mapping';
    default:
      return typeof v;
  }
}

const EXPECTED: Record<string, string> = {
  number: 'a number',
  int: 'an integer',
  string: 'a string',
  boolean: 'true or false',
  object: 'a mapping',
  record: 'a mapping',
  array: 'a list',
  literal: 'a fixed value',
};

function list(values: unknown[]): string {
  return values.map((v) => (typeof v === 'string' ? v : JSON.stringify(v))).join(', ');
}

function fieldHint(ctx: IssueContext, path: YamlPath): string | undefined {
  const schema = schemaAt(ctx.schema, ctx.data, path);
  const text = schema && descriptionOf(schema);
  return text ? `${String(path.at(-1))}: ${text}` : undefined;
}

/** The field's description, led by the range a numeric field allows. */
function rangeHint(ctx: IssueContext, path: YamlPath): string | undefined {
  const range = numberRange(ctx, path);
  const hint = [range && `set ${String(path.at(-1))} to ${range}`, fieldHint(ctx, path)].filter(Boolean).join('; ');
  return hint || undefined;
}

/** "an integer from 1 to 100", "a number > 0": what a numeric field allows, from its schema's checks. */
function numberRange(ctx: IssueContext, path: YamlPath): string | undefined {
  const schema = schemaAt(ctx.schema, ctx.data, path);
  const n = schema && unwrap(schema);
  if (!(n instanceof z.ZodNumber)) return undefined;
  const int = n.isInt;
  let lo: { value: number; inclusive: boolean } | undefined;
  let hi: { value: number; inclusive: boolean } | undefined;
  for (const check of n._zod.def.checks ?? []) {
    const d = check._zod.def as { check: string; value?: unknown; inclusive?: boolean };
    if (typeof d.value !== 'number') continue;
    const bound = { value: d.value, inclusive: d.inclusive ?? true };
    if (d.check === 'greater_than') lo = bound;
    if (d.check === 'less_than') hi = bound;
  }
  // An integer above 0 is an integer of at least 1: say it the simple way.
  if (int && lo && !lo.inclusive) lo = { value: Math.floor(lo.value) + 1, inclusive: true };
  if (int && hi && !hi.inclusive) hi = { value: Math.ceil(hi.value) - 1, inclusive: true };
  const what = int ? 'an integer' : 'a number';
  if (lo?.inclusive && hi?.inclusive) return `${what} from ${lo.value} to ${hi.value}`;
  const parts = [
    lo && `${lo.inclusive ? '≥' : '>'} ${lo.value}`,
    hi && `${hi.inclusive ? '≤' : '<'} ${hi.value}`,
  ].filter(Boolean);
  return parts.length > 0 ? `${what} ${parts.join(' and ')}` : undefined;
}

/** "source (snapshot)", "transforms[1] (normalize)", "service.retry". */
function placeLabel(ctx: IssueContext, path: YamlPath): string {
  const label = formatPath(path);
  const type = componentKindAt(path) ? (valueAt(ctx.data, path) as { type?: unknown } | undefined)?.type : undefined;
  return typeof type === 'string' ? `${label} (${type})` : label;
}

function unknownType(ctx: IssueContext, kind: ComponentKind, path: YamlPath, value: unknown): Problem {
  const types = ctx.registry[kind].map((d) => d.type);
  if (value === undefined)
    return {
      path: path.slice(0, -1),
      message: `${formatPath(path.slice(0, -1))}: missing required key "type"`,
      hint: `set type to one of the registered ${kind} types: ${types.join(', ')}`,
    };
  const guess = typeof value === 'string' ? didYouMean(value, types) : undefined;
  return {
    path,
    message: `${formatPath(path)}: unknown ${kind} type ${writtenAs(ctx, path) ?? JSON.stringify(value)}${guess ? ` (did you mean "${guess}"?)` : ''}`,
    hint: types.length
      ? `registered ${kind} types: ${types.join(', ')}`
      : `no ${kind} is registered in this build of sluice`,
  };
}

function withPrefix(issue: Issue, prefix: YamlPath): Issue {
  return { ...issue, path: [...prefix, ...issue.path] } as Issue;
}

/** A union none of whose forms matched: report the form that came closest, or the forms when none came close. */
function unionProblems(ctx: IssueContext, issue: Issue & { errors: Issue[][] }, path: YamlPath): Problem[] {
  const value = valueAt(ctx.data, path);
  const branches = issue.errors.filter((b) => b.length > 0);
  const shallow = (b: Issue[]): boolean => b.some((i) => i.path.length === 0 && i.code === 'invalid_type');
  // The closest form knows most of the keys the value has; on a tie the first form (the primary one) wins.
  const keys = value && typeof value === 'object' && !Array.isArray(value) ? Object.keys(value) : [];
  const recognised = (b: Issue[]): number => {
    const unknown = b.flatMap((i) => (i.code === 'unrecognized_keys' && i.path.length === 0 ? i.keys : []));
    return keys.filter((k) => !unknown.includes(k)).length;
  };
  const close = branches.filter((b) => !shallow(b));
  const best = close.reduce<Issue[] | undefined>(
    (a, b) => (a === undefined || recognised(b) > recognised(a) ? b : a),
    undefined,
  );
  if (best) return best.flatMap((i) => toProblems(ctx, withPrefix(i, path)));
  const expected = [
    ...new Set(
      branches.flatMap((b) =>
        b.filter((i) => i.code === 'invalid_type').map((i) => EXPECTED[(i as { expected: string }).expected] ?? ''),
      ),
    ),
  ].filter(Boolean);
  return [
    {
      path,
      message: `${formatPath(path)}: expected ${expected.join(' or ') || 'another form'}, got ${describeValue(ctx, value, path)}`,
      hint: fieldHint(ctx, path),
    },
  ];
}

function sizeText(
  issue: Issue & { origin?: string; minimum?: unknown; maximum?: unknown; inclusive?: boolean },
): string {
  const small = issue.code === 'too_small';
  const bound = String(small ? issue.minimum : issue.maximum);
  switch (issue.origin) {
    case 'string':
      return small && bound === '1'
        ? 'must not be empty'
        : `must be ${small ? 'at least' : 'at most'} ${bound} characters`;
    case 'array':
    case 'set':
      return `must have ${small ? 'at least' : 'at most'} ${bound} item${bound === '1' ? '' : 's'}`;
    default: {
      const op = small ? (issue.inclusive ? '≥' : '>') : issue.inclusive ? '≤' : '<';
      return `must be ${op} ${bound}`;
    }
  }
}

function isMissing(ctx: IssueContext, path: YamlPath): boolean {
  return path.length > 0 && valueAt(ctx.data, path) === undefined && !hasKey(ctx.data, path);
}

/** Reported at the mapping that lacks the key. */
function missingKey(ctx: IssueContext, path: YamlPath): Problem {
  const parent = path.slice(0, -1);
  const key = String(path.at(-1));
  return {
    path: parent,
    message: `${formatPath(parent)}: missing required key "${key}"`,
    hint: fieldHint(ctx, path) ?? `add \`${key}:\``,
  };
}

export function toProblems(ctx: IssueContext, issue: Issue): Problem[] {
  const path = issue.path as YamlPath;
  const label = formatPath(path);
  const value = valueAt(ctx.data, path);
  switch (issue.code) {
    case 'unrecognized_keys': {
      const shape = resolveObject(schemaAt(ctx.schema, ctx.data, path) ?? ctx.schema, value);
      const allowed = shape ? Object.keys(shape) : [];
      return issue.keys.map((key) => {
        const guess = didYouMean(key, allowed);
        return {
          path,
          key,
          message: `${formatPath([...path, key])}: unknown key "${key}"${guess ? ` (did you mean "${guess}"?)` : ''}`,
          hint: allowed.length
            ? `allowed keys ${path.length ? `in ${placeLabel(ctx, path)}` : 'at the top level'}: ${allowed.join(', ')}`
            : undefined,
        };
      });
    }
    case 'invalid_union': {
      const u = issue as Issue & { errors: Issue[][]; discriminator?: string; note?: string };
      if (u.note === 'No matching discriminator' || u.discriminator !== undefined) {
        const parent = path.at(-1) === u.discriminator ? path.slice(0, -1) : path;
        const kind = componentKindAt(parent);
        if (kind)
          return [
            unknownType(ctx, kind, [...parent, u.discriminator ?? 'type'], valueAt(ctx.data, [...parent, 'type'])),
          ];
      }
      return unionProblems(ctx, u, path);
    }
    case 'invalid_type': {
      if (isMissing(ctx, path)) return [missingKey(ctx, path)];
      const kindHere = issue.expected === 'never' ? componentKindAt(path) : undefined;
      if (kindHere) return [unknownType(ctx, kindHere, [...path, 'type'], (value as { type?: unknown } | null)?.type)];
      const expected = EXPECTED[issue.expected] ?? issue.expected;
      return [
        {
          path,
          message: `${label}: expected ${expected}, got ${describeValue(ctx, value, path)}`,
          hint: rangeHint(ctx, path),
        },
      ];
    }
    case 'invalid_value': {
      if (isMissing(ctx, path) && path.at(-1) !== 'type') return [missingKey(ctx, path)];
      const kind = path.at(-1) === 'type' ? componentKindAt(path.slice(0, -1)) : undefined;
      if (kind) return [unknownType(ctx, kind, path, value)];
      if (issue.values.length === 1)
        return [
          {
            path,
            message: `${label}: must be ${list(issue.values)}, got ${describeValue(ctx, value, path)}`,
            hint: fieldHint(ctx, path),
          },
        ];
      const guess = typeof value === 'string' ? didYouMean(value, issue.values.map(String)) : undefined;
      return [
        {
          path,
          message: `${label}: ${describeValue(ctx, value, path)} is not allowed${guess ? ` (did you mean "${guess}"?)` : ''}`,
          hint: `use one of: ${list(issue.values)}`,
        },
      ];
    }
    case 'too_small':
    case 'too_big': {
      const custom = !/^Too (small|big)/.test(issue.message);
      return [{ path, message: `${label}: ${custom ? issue.message : sizeText(issue)}`, hint: rangeHint(ctx, path) }];
    }
    case 'invalid_format': {
      const custom = !/^Invalid/.test(issue.message);
      return [
        {
          path,
          message: `${label}: ${custom ? issue.message : `${describeValue(ctx, value, path)} is not a valid ${issue.format}`}`,
          hint: fieldHint(ctx, path),
        },
      ];
    }
    case 'invalid_key':
    case 'invalid_element':
      return issue.issues.flatMap((i) => toProblems(ctx, withPrefix(i as Issue, path)));
    default: {
      // A refinement that knows what to do says so in `params.hint` (e.g. the snapshot filter's grammar checks).
      const hint = (issue as { params?: { hint?: unknown } }).params?.hint;
      return [
        { path, message: `${label}: ${issue.message}`, hint: typeof hint === 'string' ? hint : fieldHint(ctx, path) },
      ];
    }
  }
}
