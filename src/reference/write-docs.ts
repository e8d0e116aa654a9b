/**
 * `npm run docs`: rewrites the reference in docs/reference/ — the option tables from the component schemas, the
 * preset column tables from the presets' declarations — and deletes pages of components that no longer exist.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { referencePages, writeReference } from './reference-pages.js';
import { registry } from '../pipeline/registry.js';

const dir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../docs/reference');
const changed = writeReference(dir, referencePages(registry));
process.stdout.write(
  changed.length === 0
    ? 'docs/reference/ was up to date\n'
    : `rewrote docs/reference/:\n${changed.map((line) => `  ${line}\n`).join('')}`,
);
