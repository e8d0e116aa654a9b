/**
 * The reference's option tables, generated from the same zod schemas that validate pipeline files (through their
 * JSON Schema, which already says type, default, bounds and description): one table per component, nested options
 * as dotted names; and the preset column tables, from the presets' declarations. reference-pages.ts lays them out
 * as the pages of docs/reference/; a test fails when a committed page is stale.
 */
import { z } from 'zod';
import type { ComponentDef } from '../contracts/component.js';
import { describeType } from '../core/logical-type.js';
import { PRESETS, presetColumns, presetDeclared, type PresetName } from '../transforms/normalize.js';
import type { ComponentKind, Registry } from '../pipeline/registry.js';
import { pipelineSchema, serviceSchema } from '../pipeline/schema.js';

type Json = Record<string, any>;

interface Row {
  name: string;
  type: string;
  dflt: string;
  description: string;
}

function jsonSchemaOf(schema: z.ZodType): Json {
  return z.toJSONSchema(schema, { target: 'draft-7', io: 'input', unrepresentable: 'any' }) as Json;
}

const code = (s: string): string => '`' + s + '`';

function resolveRef(s: Json, defs: Json): Json {
  const ref = typeof s.$ref === 'string' ? (s.$ref as string).split('/').pop() : undefined;
  return ref && defs[ref] ? (defs[ref] as Json) : s;
}

function bounds(s: Json): string {
  const lo = s.minimum ?? s.exclusiveMinimum;
  const hi = s.maximum ?? s.exclusiveMaximum;
  const loText = lo === undefined || lo === -Number.MAX_SAFE_INTEGER ? undefined : lo;
  const hiText = hi === undefined || hi === Number.MAX_SAFE_INTEGER ? undefined : hi;
  if (
    loText !== undefined &&
    hiText !== undefined &&
    s.exclusiveMinimum === undefined &&
    s.exclusiveMaximum === undefined
  )
    return ` ${loText}–${hiText}`;
  const parts = [
    loText !== undefined ? `${s.exclusiveMinimum !== undefined ? '>' : '≥'} ${loText}` : '',
    hiText !== undefined ? `${s.exclusiveMaximum !== undefined ? '<' : '≤'} ${hiText}` : '',
  ].filter(Boolean);
  return parts.length ? ' ' + parts.join(', ') : '';
}

function typeText(s0: Json, defs: Json): string {
  const s = resolveRef(s0, defs);
  if (s !== s0 && s0.$ref) {
    const name = String(s0.$ref).split('/').pop()!;
    if (!/^__schema\d+$/.test(name)) return name;
  }
  if (s.const !== undefined) return code(JSON.stringify(s.const));
  if (Array.isArray(s.enum)) return s.enum.map((v: unknown) => code(String(v))).join(' | ');
  const alternatives = (s.anyOf ?? s.oneOf) as Json[] | undefined;
  if (alternatives) return [...new Set(alternatives.map((a) => typeText(a, defs)))].join(' or ');
  if (Array.isArray(s.type)) return (s.type as string[]).map((t) => typeText({ ...s, type: t }, defs)).join(' or ');
  switch (s.type) {
    case 'integer':
      return 'integer' + bounds(s);
    case 'number':
      return 'number' + bounds(s);
    case 'boolean':
      return 'boolean';
    case 'string':
      return s.format === 'uri' ? 'URL' : 'string';
    case 'array': {
      const min = typeof s.minItems === 'number' && s.minItems > 0 ? ` (at least ${s.minItems})` : '';
      const item = s.items ? typeText(s.items as Json, defs) : 'values';
      return `list of ${item.includes(' or ') ? `(${item})` : item}${min}`;
    }
    case 'object':
      if (s.properties) return 'object';
      if (s.additionalProperties && typeof s.additionalProperties === 'object')
        return `map of ${typeText(s.additionalProperties as Json, defs)}`;
      return 'object';
    case 'null':
      return 'null';
    default:
      return s.not !== undefined ? 'nothing' : 'any';
  }
}

function defaultText(s: Json, required: boolean): string {
  if (s.default !== undefined) {
    if (s.default !== null && typeof s.default === 'object' && !Array.isArray(s.default))
      return Object.keys(s.default).length ? 'see below' : code('{}');
    return code(JSON.stringify(s.default));
  }
  return required ? '**required**' : '';
}

function cell(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').replace(/\|/g, '\\|');
}

/** Rows of an object schema's properties; nested objects continue as `parent.child`. */
function rows(obj: Json, defs: Json, prefix = '', skip: string[] = []): Row[] {
  const out: Row[] = [];
  const required = new Set<string>((obj.required as string[] | undefined) ?? []);
  for (const [name, raw] of Object.entries((obj.properties ?? {}) as Record<string, Json>)) {
    if (skip.includes(name)) continue;
    const s = resolveRef(raw, defs);
    out.push({
      name: prefix + name,
      type: typeText(raw, defs),
      dflt: defaultText(raw.default !== undefined ? raw : s, required.has(name)),
      description: String(raw.description ?? s.description ?? ''),
    });
    if (s.type === 'object' && s.properties) out.push(...rows(s, defs, `${prefix}${name}.`));
  }
  return out;
}

function table(r: Row[]): string {
  if (r.length === 0) return '_No options besides `type`._\n';
  const lines = ['| Option | Type | Default | Description |', '|---|---|---|---|'];
  for (const row of r)
    lines.push(`| ${code(row.name)} | ${cell(row.type)} | ${cell(row.dflt)} | ${cell(row.description)} |`);
  return lines.join('\n') + '\n';
}

/** The options table of one component, `type` left out (its page's title names it). */
export function componentOptionsTable(def: ComponentDef<ComponentKind>): string {
  const s = jsonSchemaOf(def.schema as z.ZodType);
  return table(rows(s, (s.definitions ?? {}) as Json, '', ['type']));
}

/** The options table of a pipeline file's top level, the component blocks and `service` left out. */
export function topLevelOptionsTable(reg: Registry): string {
  return table(rows(jsonSchemaOf(pipelineSchema(reg)), {}, '', ['service', 'source', 'transforms', 'sink', 'sinks']));
}

/** The options table of the `service` block. */
export function serviceOptionsTable(): string {
  const service = jsonSchemaOf(serviceSchema);
  return table(rows(service, (service.definitions ?? {}) as Json));
}

/** One section per `normalize` preset: its columns with type, nullability and description, from its declaration. */
export function presetColumnsSections(): { preset: PresetName; markdown: string }[] {
  return (Object.keys(PRESETS) as PresetName[]).map((preset) => {
    const all = presetDeclared(preset, true);
    const base = new Set(presetDeclared(preset, false).map((c) => c.name));
    const lines = all.map((c) => {
      const note = base.has(c.name) ? '' : ' With `keep_image_data: true` only.';
      const type = code(describeType(c.type));
      return `| ${code(c.name)} | ${type} | ${c.nullable ? '' : 'not null'} | ${c.description}${note} |`;
    });
    // A preset whose rows carry more than it declares (its declaration says so: no full column set).
    const intro =
      presetColumns(preset) === undefined
        ? ' Fields of the record that are not declared here pass through after these columns, typed from the data.'
        : '';
    return {
      preset,
      markdown: `${all.length} columns.${intro}\n\n| column | type | | description |\n|---|---|---|---|\n${lines.join('\n')}\n`,
    };
  });
}
