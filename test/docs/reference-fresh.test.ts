import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { referenceDrift, referencePages, writeReference } from '../../src/reference/reference-pages.js';
import { registry } from '../../src/pipeline/registry.js';

const committed = path.resolve(import.meta.dirname, '../../docs/reference');

function staleMessage(drift: string[]): string {
  return `docs/reference/ is stale: run \`npm run docs\` and commit the pages\n${drift.join('\n')}`;
}

describe('docs/reference/', () => {
  it('is what `npm run docs` writes from the schemas and presets now', () => {
    const drift = referenceDrift(committed, referencePages(registry));
    expect(drift, staleMessage(drift)).toEqual([]);
  });

  it('is found stale when a page was edited, is missing, or names a component that is gone', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'sluice-reference-'));
    try {
      cpSync(committed, dir, { recursive: true });
      writeFileSync(path.join(dir, 'sinks/postgres.md'), '# Sink `postgres`\n\nan old page\n');
      rmSync(path.join(dir, 'transforms/cast.md'));
      writeFileSync(path.join(dir, 'sources/gone.md'), '# Source `gone`\n');
      const pages = referencePages(registry);
      expect(referenceDrift(dir, pages)).toEqual([
        'transforms/cast.md: missing',
        'sinks/postgres.md: differs from what the generator writes now',
        'sources/gone.md: no longer generated',
      ]);
      expect(writeReference(dir, pages)).toHaveLength(3);
      expect(referenceDrift(dir, pages)).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
