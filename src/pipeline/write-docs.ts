/** `npm run docs`: rewrites the option tables in README.md (between the options markers) from the schemas. */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { optionsMarkdown, replaceOptionsSection } from './options-doc.js';
import { registry } from './registry.js';

const readme = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../README.md');
writeFileSync(readme, replaceOptionsSection(readFileSync(readme, 'utf8'), optionsMarkdown(registry)));
process.stdout.write('wrote the options section of README.md\n');
