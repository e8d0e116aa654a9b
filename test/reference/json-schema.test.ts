import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildJsonSchema, jsonSchemaText, SCHEMA_PATH } from '../../src/reference/json-schema.js';
import { registry } from '../../src/pipeline/registry.js';

const root = path.resolve(import.meta.dirname, '../..');
type Json = Record<string, any>;

describe('config/pipeline.schema.json', () => {
  it('is up to date with the component schemas (regenerate with `npm run schema`)', () => {
    const committed = readFileSync(path.join(root, SCHEMA_PATH), 'utf8');
    expect(committed === jsonSchemaText(registry), 'config/pipeline.schema.json is stale: run `npm run schema`').toBe(
      true,
    );
  });

  it('offers every registered component, discriminated by `type`, with descriptions', () => {
    const schema = buildJsonSchema(registry) as Json;
    expect(schema.$schema).toBe('http://json-schema.org/draft-07/schema#');
    expect(schema.additionalProperties).toBe(false);
    const constOf = (s: Json) => s.properties?.type?.const;
    expect(schema.properties.source.oneOf.map(constOf)).toEqual(registry.source.map((d) => d.type));
    expect(schema.properties.transforms.items.oneOf.map(constOf)).toEqual(registry.transform.map((d) => d.type));
    expect(schema.properties.sink.oneOf.map(constOf)).toEqual(registry.sink.map((d) => d.type));
    for (const s of schema.properties.source.oneOf as Json[]) expect(s.additionalProperties).toBe(false);
    expect(schema.properties.service.properties.base_url.description).toMatch(/emulator/);
    expect(schema.oneOf).toEqual([{ required: ['sink'] }, { required: ['sinks'] }]);
  });

  it('lets typed options hold a ${VAR} reference, which the loader converts', () => {
    const schema = buildJsonSchema(registry) as Json;
    const serp = (schema.properties.source.oneOf as Json[]).find((s) => s.properties.type.const === 'serp')!;
    const concurrency = serp.properties.concurrency;
    expect(concurrency.default).toBe(8);
    expect(concurrency.anyOf[0]).toMatchObject({ type: 'integer', minimum: 1 });
    expect(concurrency.anyOf[1]).toEqual({ $ref: '#/definitions/env_reference' });
    const pattern = new RegExp(schema.definitions.env_reference.pattern);
    for (const ok of ['${N}', '${N:-4}', '${N-4}', '${KEY:?set it}']) expect(pattern.test(ok)).toBe(true);
    for (const bad of ['4', '$N', '${N', 'x${N}']) expect(pattern.test(bad)).toBe(false);
    // Discriminators stay exact: they are what picks the component in the editor.
    expect(serp.properties.type).toEqual({ type: 'string', const: 'serp' });
  });
});
