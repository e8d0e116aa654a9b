/**
 * config/pipeline.schema.json, generated from the same zod schemas that validate pipeline files, for editor
 * completion and hover docs (YAML language server: `# yaml-language-server: $schema=../config/pipeline.schema.json`).
 *
 * Draft-07, because that is what the YAML language server reads best. Two adjustments to zod's output:
 * typed values (numbers, booleans, enums, patterns, URLs) also accept a lone `${VAR…}` reference, which the loader
 * interpolates and converts (an editor cannot), and the integer bounds zod adds for "safe integers" are dropped.
 */
import { z } from 'zod';
import type { Registry } from '../pipeline/registry.js';
import { pipelineSchema } from '../pipeline/schema.js';

type Json = Record<string, unknown>;

export const SCHEMA_PATH = 'config/pipeline.schema.json';

const REFERENCE_DEF = 'env_reference';
const ENV_REFERENCE: Json = {
  type: 'string',
  pattern: '^\\$\\{[A-Za-z_][A-Za-z0-9_]*((:?[-?])[^}]*)?\\}$',
  description: 'An environment variable reference, interpolated when the pipeline loads.',
};

export function buildJsonSchema(reg: Registry): Json {
  const generated = z.toJSONSchema(pipelineSchema(reg), {
    target: 'draft-7',
    io: 'input',
    unrepresentable: 'any',
  }) as Json;
  const schema: Json = {
    $schema: generated.$schema,
    title: 'sluice pipeline',
    description: 'A sluice pipeline file: a source, optional transforms, and one sink (`sink`) or several (`sinks`).',
    ...Object.fromEntries(Object.entries(generated).filter(([k]) => k !== '$schema')),
    oneOf: [{ required: ['sink'] }, { required: ['sinks'] }],
  };
  const adjusted = adjust(schema) as Json;
  adjusted.definitions = { ...(adjusted.definitions as Json | undefined), [REFERENCE_DEF]: ENV_REFERENCE };
  return adjusted;
}

/** The file's exact text: stable key order and a trailing newline, so a stale copy is a plain text difference. */
export function jsonSchemaText(reg: Registry): string {
  return JSON.stringify(buildJsonSchema(reg), null, 2) + '\n';
}

/** Keywords whose value is a schema, or a list of schemas. */
const SCHEMA_KEYWORDS = new Set(['items', 'additionalProperties', 'not', 'anyOf', 'oneOf', 'allOf', 'contains']);
/** Keywords whose value maps names to schemas. */
const MAP_KEYWORDS = new Set(['properties', 'definitions', 'patternProperties']);

function adjust(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(adjust);
  if (!schema || typeof schema !== 'object') return schema;
  const out: Json = {};
  for (const [k, v] of Object.entries(schema as Json)) {
    if (SCHEMA_KEYWORDS.has(k)) out[k] = adjust(v);
    else if (MAP_KEYWORDS.has(k))
      out[k] = Object.fromEntries(Object.entries(v as Json).map(([name, s]) => [name, adjust(s)]));
    else out[k] = v;
  }
  if (out.minimum === -Number.MAX_SAFE_INTEGER) delete out.minimum;
  if (out.maximum === Number.MAX_SAFE_INTEGER) delete out.maximum;
  return acceptsReference(out) ? withReference(out) : out;
}

/** Values whose text an editor would flag although `${VAR}` in their place is fine. */
function acceptsReference(s: Json): boolean {
  if (s.const !== undefined) return false; // the `type` discriminators stay exact: they pick the component
  if (s.type === 'number' || s.type === 'integer' || s.type === 'boolean') return true;
  return s.type === 'string' && (s.enum !== undefined || s.pattern !== undefined || s.format !== undefined);
}

function withReference(s: Json): Json {
  const { description, default: dflt, ...rest } = s;
  return {
    ...(description !== undefined && { description }),
    ...(dflt !== undefined && { default: dflt }),
    anyOf: [rest, { $ref: `#/definitions/${REFERENCE_DEF}` }],
  };
}
