import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { EXIT_CODES } from '../../src/core/errors.js';

const guide = readFileSync(path.resolve(import.meta.dirname, '../../docs/guides/nightly-cron.md'), 'utf8');

describe("the cron guide's exit-code table", () => {
  it('lists exactly the codes the CLI exits with', () => {
    const table = guide.split('<!-- exit-codes:start -->')[1]?.split('<!-- exit-codes:end -->')[0] ?? '';
    const documented = [...table.matchAll(/^\|\s*(\d+)\s*\|/gm)].map((m) => Number(m[1]));
    expect(documented).toEqual([...new Set(Object.values(EXIT_CODES))].sort((a, b) => a - b));
  });
});
