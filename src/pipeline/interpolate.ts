/**
 * `${VAR}` interpolation of the string values of a pipeline file, with shell semantics:
 *
 * - `${VAR}`          the variable; an error when it is unset (set but empty gives "")
 * - `${VAR:-default}` the default when VAR is unset or empty (`${VAR-default}`: only when unset)
 * - `${VAR:?message}` an error with the message when VAR is unset or empty (`${VAR?message}`: only when unset)
 * - `$${`             a literal `${`; a `$` not followed by `{` is literal anyway (`max_cost: $100.00`)
 *
 * A default or message runs to the first `}` and is not interpolated again. Only values are interpolated, never
 * keys. Results are strings; a value that is exactly one reference (`concurrency: ${N:-4}`) is converted by the
 * loader when the schema wants a number or a boolean there (see load.ts), because the variable's text is all the
 * user could write.
 */
import { isMap, isScalar, isSeq, type Document, type Node, type Scalar } from 'yaml';

export type Env = Record<string, string | undefined>;

export class InterpolationError extends Error {
  constructor(
    message: string,
    /** Index of the offending `${` in the text. */
    readonly index: number,
    /** The reference as written, to find it in the file. */
    readonly reference: string,
    readonly hint: string,
  ) {
    super(message);
    this.name = 'InterpolationError';
  }
}

export interface Interpolated {
  value: string;
  /** The text was exactly one reference (no other characters around it). */
  whole: boolean;
  /** The environment variables the text referenced, in order (a fix line names the one the file really reads). */
  variables: string[];
}

const REFERENCE = /^([A-Za-z_][A-Za-z0-9_]*)(?:(:-|:\?|-|\?)([\s\S]*))?$/;

export function interpolate(text: string, env: Env): Interpolated {
  if (!text.includes('$')) return { value: text, whole: false, variables: [] };
  let out = '';
  let refs = 0;
  const variables: string[] = [];
  let i = 0;
  while (i < text.length) {
    const dollar = text.indexOf('$', i);
    if (dollar < 0) {
      out += text.slice(i);
      break;
    }
    out += text.slice(i, dollar);
    if (text.startsWith('$${', dollar)) {
      out += '${';
      i = dollar + 3;
      continue;
    }
    if (text[dollar + 1] !== '{') {
      out += '$';
      i = dollar + 1;
      continue;
    }
    const close = text.indexOf('}', dollar + 2);
    if (close < 0)
      throw new InterpolationError(
        'unterminated `${`: no closing `}`',
        dollar,
        text.slice(dollar),
        'close the reference (`${NAME}`), or write `$${` for a literal `${`',
      );
    const raw = text.slice(dollar, close + 1);
    out += resolve(raw, text.slice(dollar + 2, close), dollar, env);
    const name = REFERENCE.exec(text.slice(dollar + 2, close))?.[1];
    if (name !== undefined) variables.push(name);
    refs++;
    i = close + 1;
  }
  const whole = refs === 1 && /^\$\{[^}]*\}$/.test(text);
  return { value: out, whole, variables };
}

function resolve(raw: string, inner: string, index: number, env: Env): string {
  const m = REFERENCE.exec(inner);
  if (!m)
    throw new InterpolationError(
      `\`${raw}\` is not a valid reference`,
      index,
      raw,
      'write ${NAME}, ${NAME:-default} or ${NAME:?message} (NAME: letters, digits, _), or $${ for a literal ${',
    );
  const [, name, op, arg = ''] = m as unknown as [string, string, string | undefined, string | undefined];
  const value = env[name];
  const missing = op === '-' || op === '?' ? value === undefined : value === undefined || value === '';
  if (op === ':-' || op === '-') return missing ? arg : (value as string);
  if (op === ':?' || op === '?') {
    if (missing)
      throw new InterpolationError(
        `${name}: ${arg || 'is not set'}`,
        index,
        raw,
        `set ${name} in the environment (export ${name}=…)`,
      );
    return value as string;
  }
  if (value === undefined)
    throw new InterpolationError(
      `environment variable ${name} is not set`,
      index,
      raw,
      `export ${name}=…, or give a default in the file: \${${name}:-value}`,
    );
  return value;
}

export type YamlPath = (string | number)[];

export interface ScalarProblem {
  scalar: Scalar;
  path: YamlPath;
  error: InterpolationError;
}

export interface DocumentInterpolation {
  problems: ScalarProblem[];
  /** Paths (JSON-encoded) of values that were exactly one reference, with their nodes. */
  wholeReferences: Map<string, Scalar>;
  /** Paths (JSON-encoded) of values that referenced variables, with the variables' names. */
  variables: Map<string, string[]>;
  /** Paths (JSON-encoded) of values that referenced variables, with their text as written (`${PGPW}`). */
  written: Map<string, string>;
}

/** Interpolates every string value of the document in place; keys are left alone. */
export function interpolateDocument(doc: Document, env: Env): DocumentInterpolation {
  const result: DocumentInterpolation = {
    problems: [],
    wholeReferences: new Map(),
    variables: new Map(),
    written: new Map(),
  };
  const visit = (node: Node | null | undefined, path: YamlPath): void => {
    if (!node) return;
    if (isScalar(node)) {
      if (typeof node.value !== 'string') return;
      try {
        const written = node.value;
        const { value, whole, variables } = interpolate(written, env);
        node.value = value;
        if (whole) result.wholeReferences.set(JSON.stringify(path), node);
        if (variables.length > 0) {
          result.variables.set(JSON.stringify(path), variables);
          result.written.set(JSON.stringify(path), written);
        }
      } catch (err) {
        if (!(err instanceof InterpolationError)) throw err;
        result.problems.push({ scalar: node, path, error: err });
      }
    } else if (isMap(node)) {
      for (const pair of node.items) {
        const key = isScalar(pair.key) ? String(pair.key.value) : String(pair.key);
        visit(pair.value as Node | null, [...path, key]);
      }
    } else if (isSeq(node)) {
      node.items.forEach((item, i) => visit(item as Node | null, [...path, i]));
    }
  };
  visit(doc.contents as Node | null, []);
  return result;
}
