import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/cli.js';
import { memoryIo } from './memory-io.js';

function pipelineWithLetters(letters: object[]): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'sluice-dl-'));
  writeFileSync(path.join(dir, 'in.jsonl'), '{"a":1}\n');
  const file = path.join(dir, 'p.yaml');
  writeFileSync(
    file,
    'version: 1\nname: dl_test\nservice: { base_url: emulator, api_key: emulator-key }\n' +
      'source: { type: file, paths: [in.jsonl], format: jsonl }\nsink: { type: jsonl, path: out }\n',
  );
  const state = path.join(dir, '.sluice', 'dl_test');
  mkdirSync(state, { recursive: true });
  writeFileSync(path.join(state, 'dead-letters.jsonl'), letters.map((l) => JSON.stringify(l) + '\n').join(''));
  return file;
}

const letter = {
  unit: 'file:in.jsonl',
  offset: 120,
  stage: 'decode',
  reason: 'Unexpected token } in JSON',
  raw: '{"a":}',
  run: 'r1',
  at: '2026-01-01T00:00:00.000Z',
};

describe('sluice dead-letters', () => {
  it('lists what was rejected, where and why', async () => {
    const file = pipelineWithLetters([
      letter,
      { ...letter, offset: 200, stage: 'transform:cast', raw: 'x'.repeat(300) },
    ]);
    const io = memoryIo({});
    expect(await runCli(['dead-letters', file], io)).toBe(0);
    expect(io.stdout).toEqual([
      '2 dead letters not yet replayed (dl_test)',
      '2026-01-01T00:00:00.000Z file:in.jsonl decode @120: Unexpected token } in JSON\n    {"a":}',
      `2026-01-01T00:00:00.000Z file:in.jsonl transform:cast @200: Unexpected token } in JSON\n    ${'x'.repeat(160)}…`,
    ]);
    const json = memoryIo({});
    expect(await runCli(['dead-letters', file, '--json'], json)).toBe(0);
    expect(json.stdout.map((l) => JSON.parse(l) as unknown)).toEqual([
      letter,
      { ...letter, offset: 200, stage: 'transform:cast', raw: 'x'.repeat(300) },
    ]);
  });

  it('does not start an empty replay run when there is nothing to replay', async () => {
    const file = pipelineWithLetters([]);
    const io = memoryIo({});
    expect(await runCli(['dead-letters', file, '--replay'], io)).toBe(0);
    expect(io.stdout).toEqual(['no dead letters to replay']);
  });
});
