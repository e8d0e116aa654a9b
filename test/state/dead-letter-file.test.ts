import { appendFileSync, mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { registerSecret } from '../../src/core/redact.js';
import { DeadLetterFile, readDeadLetters } from '../../src/state/dead-letter-file.js';

describe('dead-letter file', () => {
  it('appends letters with reason and offset, de-duplicates retried units, and survives a torn last line', async () => {
    const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'sluice-dlq-')), 'dl.jsonl');
    const w = new DeadLetterFile(file, 'run1');
    await w.open();
    w.write({ unit: 'u1', offset: 10, stage: 'decode', reason: 'Unexpected token', raw: '{bad' });
    // The same record rejected again by a retried attempt of the unit.
    w.write({ unit: 'u1', offset: 10, stage: 'decode', reason: 'Unexpected token', raw: '{bad' });
    w.write({ unit: 'u2', offset: 0, stage: 'transform:cast', reason: 'not a number', raw: '{"x":"a"}' });
    await w.close();
    appendFileSync(file, '{"unit":"u3","sta');
    const letters = await readDeadLetters(file);
    expect(letters.map((d) => [d.unit, d.offset, d.reason])).toEqual([
      ['u1', 10, 'Unexpected token'],
      ['u2', 0, 'not a number'],
    ]);
  });

  it('never writes a registered secret', async () => {
    registerSecret('canary-key-123456');
    const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'sluice-dlq-')), 'dl.jsonl');
    const w = new DeadLetterFile(file, 'run1');
    await w.open();
    w.write({ unit: 'u', stage: 'decode', reason: 'auth canary-key-123456 failed', raw: 'canary-key-123456' });
    await w.close();
    expect(readFileSync(file, 'utf8')).not.toContain('canary-key-123456');
  });
});
