/**
 * Writes a pipeline as commented YAML, its comments taken from the zod schemas that validate it: every option set
 * has its description above it, and every option of the source, the sink, the service and the file left out is
 * listed commented out with its default. A new option in a schema appears in the next `sluice init` untouched.
 */
import { parse, stringify } from 'yaml';
import type { z } from 'zod';
import { descriptionOf, objectShape } from '../../pipeline/schema-walk.js';

const WIDTH = 100;

export type Value = unknown;

/** How one mapping is written: its schema (for comments), and whether the options it leaves out are listed. */
export interface Section {
  schema: z.ZodType | undefined;
  listUnset?: boolean;
  /** Options never listed (e.g. `sinks` beside `sink`). */
  skip?: readonly string[];
  /** A mapping key's own renderer, for values that are sections of their own (the source, the sink…). */
  children?: Record<string, Section>;
  /** Comments for keys whose schema says nothing useful (a component's `type`: the component's description). */
  notes?: Record<string, string>;
  /** Comments above the items of a list value, by index (the transforms' descriptions). */
  itemComments?: Record<string, readonly string[]>;
}

/** Words wrapped into `# ` lines at `indent`, at most WIDTH wide. */
export function commentLines(text: string, indent: number): string[] {
  const pad = ' '.repeat(indent);
  const room = Math.max(40, WIDTH - indent - 2);
  const out: string[] = [];
  let line = '';
  for (const word of text.replace(/\s+/g, ' ').trim().split(' ')) {
    if (line && line.length + 1 + word.length > room) {
      out.push(`${pad}# ${line}`);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) out.push(`${pad}# ${line}`);
  return out;
}

/** The first sentence of a description: enough for an option left at its default. */
export function firstSentence(text: string): string {
  const m = /^(.*?[.!?])\s+(?=[A-Z])/s.exec(text);
  return (m ? m[1]! : text).trim();
}

/** A value on one line, in YAML's flow style (`[a, b]`, `{ k: v }`), quoted where YAML needs it. */
export function flow(value: Value): string {
  // Scalars in block style: flow style would quote `${VAR:-default}` for its braces.
  const collection = value !== null && typeof value === 'object';
  return stringify(value, { ...(collection && { collectionStyle: 'flow' }), lineWidth: 0 }).trimEnd();
}

function isPlainObject(v: Value): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/**
 * What an option left out amounts to (undefined: nothing to show): what zod fills in; else the default its
 * description states — `(default 64)`, `Default false.`, `the service defaults to qualityScore` — when the option
 * takes that value as written; else, for a mapping, its own options' defaults. Many options leave their default to
 * the code that reads them (a pool's size, a retry policy) and say it in words: the listing shows it all the same.
 */
export function defaultOf(schema: z.ZodType): Value {
  const filled = schema.safeParse(undefined);
  if (filled.success && filled.data !== undefined) return filled.data;
  const stated = statedDefault(schema);
  if (stated !== undefined) return stated;
  const shape = objectShape(schema);
  if (!shape) return undefined;
  const fields = Object.entries(shape).flatMap(([k, field]) => {
    const v = defaultOf(field);
    return v === undefined ? [] : [[k, v] as const];
  });
  if (fields.length === 0) return undefined;
  const value = Object.fromEntries(fields);
  return schema.safeParse(value).success ? value : undefined;
}

const STATED_DEFAULT = [
  /\(default:? ([^()]+?)\)/i,
  /\bdefaults? to ([^\s,;()]+)/i,
  /\bDefault:? ([^\s;()]+?)\.(?:\s|$)/,
];

function statedDefault(schema: z.ZodType): Value {
  const text = descriptionOf(schema);
  if (!text) return undefined;
  for (const pattern of STATED_DEFAULT) {
    const said = pattern.exec(text)?.[1]?.replace(/[`"]/g, '').trim();
    if (!said) continue;
    let value: Value;
    try {
      value = parse(said);
    } catch {
      continue;
    }
    // Only a value the option takes as it is: "(default: add columns, widen types)" describes, it is no value, and
    // neither is a placeholder (`.sluice/<name>`).
    if (value === undefined || value === null || /<[^>]*>/.test(said)) continue;
    if (schema.safeParse(value).success) return value;
  }
  return undefined;
}

/** One option set in a mapping: one line when it fits and is not a section of its own, else a block. */
function renderEntry(
  key: string,
  value: Value,
  schema: z.ZodType | undefined,
  indent: number,
  parent: Section,
): string[] {
  const pad = ' '.repeat(indent);
  const child = parent.children?.[key];
  const comments = parent.itemComments?.[key] ?? [];
  const inline = flow(value);
  const collection = isPlainObject(value) || (Array.isArray(value) && value.length > 0);
  const ownLines = child !== undefined || comments.length > 0;
  if (!collection || (!ownLines && pad.length + key.length + 2 + inline.length <= WIDTH))
    return [`${pad}${key}: ${inline}`];
  if (Array.isArray(value)) {
    return [
      `${pad}${key}:`,
      ...value.flatMap((item, i) => [
        ...(comments[i] ? commentLines(comments[i], indent + 2) : []),
        `${pad}  - ${flow(item)}`,
      ]),
    ];
  }
  return [`${pad}${key}:`, ...renderMapping(value as Record<string, unknown>, child ?? { schema }, indent + 2)];
}

/** A mapping's lines at `indent`: the options set, with their descriptions, and (`listUnset`) those left out. */
export function renderMapping(value: Record<string, unknown>, section: Section, indent: number): string[] {
  const pad = ' '.repeat(indent);
  const shape = section.schema ? objectShape(section.schema) : undefined;
  const keys = [...Object.keys(shape ?? {}), ...Object.keys(value).filter((k) => !(k in (shape ?? {})))];
  const lines: string[] = [];
  for (const key of keys) {
    if (section.skip?.includes(key)) continue;
    const schema = shape?.[key];
    const about = section.notes?.[key] ?? (schema ? descriptionOf(schema) : undefined);
    // The file's top-level sections apart, for the eye.
    if (indent === 0 && lines.length > 0) lines.push('');
    if (value[key] !== undefined) {
      if (about) lines.push(...commentLines(about, indent));
      lines.push(...renderEntry(key, value[key], schema, indent, section));
    } else if (section.listUnset && schema) {
      const dflt = defaultOf(schema);
      if (about) lines.push(...commentLines(firstSentence(about), indent));
      const empty = dflt === undefined || (isPlainObject(dflt) && Object.keys(dflt).length === 0);
      const line = `${pad}# ${key}:${empty ? '' : ` ${flow(dflt)}`}`;
      // A mapping too long for a line is listed as a commented block, one option a line.
      if (line.length > WIDTH && isPlainObject(dflt))
        lines.push(`${pad}# ${key}:`, ...Object.entries(dflt).map(([k, v]) => `${pad}#   ${k}: ${flow(v)}`));
      else lines.push(line);
    }
  }
  return lines;
}
