import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { OPTIONS_END, OPTIONS_START, optionsMarkdown, replaceOptionsSection } from '../../src/pipeline/options-doc.js';
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
