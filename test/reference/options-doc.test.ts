import { describe, expect, it } from 'vitest';
import { componentOptionsTable, presetColumnsSections } from '../../src/reference/options-doc.js';
import { referencePages } from '../../src/reference/reference-pages.js';
import { findDef, registry } from '../../src/pipeline/registry.js';
import { presetDeclared } from '../../src/transforms/normalize.js';

describe('reference option tables', () => {
  it('give every registered component a page with its description and every option', () => {
    const pages = referencePages(registry);
    const dirs = { source: 'sources', transform: 'transforms', sink: 'sinks' } as const;
    for (const kind of ['source', 'transform', 'sink'] as const)
      for (const def of registry[kind]) {
        const page = pages.get(`${dirs[kind]}/${def.type}.md`) ?? '';
        expect(page, `${kind} ${def.type}`).toContain(`\n\n${def.description}\n\n`);
        expect(pages.get('README.md')).toContain(`(${dirs[kind]}/${def.type}.md)`);
      }
  });

  it('say type, bounds, default and whether an option is required', () => {
    const serp = componentOptionsTable(findDef('source', 'serp'));
    expect(serp).toMatch(/\| `zone` \| string \| \*\*required\*\* \| Zone/);
    expect(serp).toMatch(/\| `concurrency` \| integer 1–64 \| `8` \|/);
    expect(serp).toMatch(/\| `format` \| `raw` \\\| `json` \| `"raw"` \|/);
    expect(componentOptionsTable(findDef('source', 'snapshot'))).toMatch(
      /\| `download\.batch_size` \| integer ≥ 1000 \| `10000` \|/,
    );
  });
});

describe('reference preset column tables', () => {
  it('list every declared column of every preset, with its type', () => {
    for (const { preset, markdown } of presetColumnsSections())
      for (const c of presetDeclared(preset, true)) expect(markdown).toContain(`| \`${c.name}\` |`);
    const md = presetColumnsSections()
      .map((s) => s.markdown)
      .join('\n');
    expect(md).toContain('| `rating_normalized` | `DOUBLE` |  |');
    expect(md).toContain('| `edited` | `BOOLEAN` | not null |');
    expect(md).toMatch(/\| `icon` \| `VARCHAR` \| +\| .*With `keep_image_data: true` only\. \|/);
  });
});
