/**
 * `npm run docs`: rewrites the option tables in README.md (between the options markers) from the schemas, and the
 * preset column tables (between the preset-columns markers) from the presets' declarations.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  PRESET_COLUMNS_END,
  PRESET_COLUMNS_START,
  optionsMarkdown,
  presetColumnsMarkdown,
  replaceOptionsSection,
  replaceSection,
} from './options-doc.js';
import { registry } from './registry.js';

const readme = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../README.md');
const withOptions = replaceOptionsSection(readFileSync(readme, 'utf8'), optionsMarkdown(registry));
writeFileSync(readme, replaceSection(withOptions, PRESET_COLUMNS_START, PRESET_COLUMNS_END, presetColumnsMarkdown()));
process.stdout.write('wrote the options and preset column sections of README.md\n');
