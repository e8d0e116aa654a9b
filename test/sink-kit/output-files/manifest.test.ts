/**
 * A manifest's staged entries as they are read back: a unit's bytes in a shared staging file are a range of it, and
 * a range that is not one is refused before anything reads or cuts that file.
 */
import { describe, expect, it } from 'vitest';
import { parseManifest } from '../../../src/sink-kit/output-files/manifest.js';

function manifestWith(staged: Record<string, unknown>): string {
  return JSON.stringify({
    version: 1,
    pipeline: 'p',
    format: 'jsonl',
    updated_at: '2026-11-29T00:00:00.000Z',
    units: { u: { records: 1, files: [], committed_at: '2026-11-29T00:00:00.000Z', staged } },
  });
}

const parse = (staged: Record<string, unknown>) =>
  parseManifest(manifestWith(staged), '/out/_sluice_manifest.json', '/out', 'jsonl');

describe('a manifest’s staged ranges', () => {
  it('reads a unit staged as a range of a spool, or as a file of its own', () => {
    const file = '.sluice-staged/spool-0a1b2c.staged';
    expect(parse({ file, offset: 4096, bytes: 100, schema: [] }).units.u!.staged).toEqual({
      file,
      offset: 4096,
      bytes: 100,
      schema: [],
    });
    expect(parse({ file, bytes: 100, schema: [] }).units.u!.staged?.offset).toBeUndefined();
  });

  it('refuses a range that is not one: negative, fractional or not a number', () => {
    const file = '.sluice-staged/spool-0a1b2c.staged';
    for (const range of [
      { offset: -1, bytes: 10 },
      { offset: 1.5, bytes: 10 },
      { offset: '10', bytes: 10 },
      { offset: 0, bytes: -10 },
      { bytes: null },
    ])
      expect(() => parse({ file, schema: [], ...range }), JSON.stringify(range)).toThrow(
        /unit "u" staged\.offset\/bytes names .*not a range of bytes in its staging file: refused/,
      );
  });
});
