/** `npm run schema`: regenerates config/pipeline.schema.json from the registered components' schemas. */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { jsonSchemaText, SCHEMA_PATH } from './json-schema.js';
import { registry } from '../pipeline/registry.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const target = path.join(root, SCHEMA_PATH);
mkdirSync(path.dirname(target), { recursive: true });
writeFileSync(target, jsonSchemaText(registry));
process.stdout.write(`wrote ${SCHEMA_PATH}\n`);
