import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  OPTIONS_END,
  OPTIONS_START,
  PRESET_COLUMNS_END,
  PRESET_COLUMNS_START,
  optionsMarkdown,
  presetColumnsMarkdown,
  replaceOptionsSection,
  replaceSection,
} from '../../src/pipeline/options-doc.js';
import { PRESETS, presetDeclared, type PresetName } from '../../src/transforms/normalize.js';
import { registry } from '../../src/pipeline/registry.js';

const readme = readFileSync(path.resolve(import.meta.dirname, '../../README.md'), 'utf8');

describe('README option tables', () => {
  it('are up to date with the component schemas (regenerate with `npm run docs`)', () => {
    const expected = replaceOptionsSection(readme, optionsMarkdown(registry));
    expect(readme === expected, 'the options section of README.md is stale: run `npm run docs`').toBe(true);
  });

  it('have a table for every registered component, with every option', () => {
    const md = optionsMarkdown(registry);
    for (const kind of ['source', 'transform', 'sink'] as const)
      for (const def of registry[kind]) expect(md).toContain(`##### \`${def.type}\`\n\n${def.description}\n`);
    const serp = md.slice(md.indexOf('##### `serp`'), md.indexOf('#####', md.indexOf('##### `serp`') + 5));
    expect(serp).toMatch(/\| `zone` \| string \| \*\*required\*\* \| Zone/);
    expect(serp).toMatch(/\| `concurrency` \| integer 1–64 \| `8` \|/);
    expect(serp).toMatch(/\| `format` \| `raw` \\\| `json` \| `"raw"` \|/);
    const snapshot = md.slice(md.indexOf('##### `snapshot`'));
    expect(snapshot).toMatch(/\| `download\.batch_size` \| integer ≥ 1000 \| `10000` \|/);
  });

  it('replace only what is between the markers', () => {
    const text = `a\n${OPTIONS_START}\nold\n${OPTIONS_END}\nb\n`;
    expect(replaceOptionsSection(text, 'new\n')).toBe(`a\n${OPTIONS_START}\n\nnew\n\n${OPTIONS_END}\nb\n`);
    expect(() => replaceOptionsSection('no markers', 'x')).toThrow(/markers/);
  });
});

describe('README preset column tables', () => {
  it("are up to date with the presets' declarations (regenerate with `npm run docs`)", () => {
    const expected = replaceSection(readme, PRESET_COLUMNS_START, PRESET_COLUMNS_END, presetColumnsMarkdown());
    expect(readme === expected, 'the preset columns section of README.md is stale: run `npm run docs`').toBe(true);
  });

  it('list every declared column of every preset, with its type', () => {
    const md = presetColumnsMarkdown();
    for (const preset of Object.keys(PRESETS) as PresetName[]) {
      const section = md.slice(md.indexOf(`##### \`${preset}\``)).split('\n#####')[0]!;
      for (const c of presetDeclared(preset, true)) expect(section).toContain(`| \`${c.name}\` |`);
    }
    expect(md).toContain('| `rating_normalized` | `DOUBLE` |  |');
    expect(md).toContain('| `edited` | `BOOLEAN` | not null |');
    expect(md).toMatch(/\| `icon` \| `VARCHAR` \| +\| .*With `keep_image_data: true` only\. \|/);
  });
});
