import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { FileStateStore } from '../../src/state/state-store.js';

describe('FileStateStore', () => {
  it('persists every set before resolving, and reopens with the same values', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'sluice-state-'));
    const file = path.join(dir, 'nested', 'state.json');
    const s = await FileStateStore.open(file);
    await s.set('snapshot:job:abc', 'snap_1');
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ 'snapshot:job:abc': 'snap_1' });
    await Promise.all([s.set('a', 1), s.set('b', 2), s.delete('snapshot:job:abc')]);
    const again = await FileStateStore.open(file);
    expect(again.get('a')).toBe(1);
    expect(again.get('b')).toBe(2);
    expect(again.get('snapshot:job:abc')).toBeUndefined();
    expect(again.keys()).toEqual(['a', 'b']);
  });

  it('removes the temp files of writers killed before their rename, not those of live processes', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'sluice-state-'));
    const file = path.join(dir, 'state.json');
    // Above Linux's largest pid: no such process. The parent of this process is alive.
    writeFileSync(path.join(dir, 'state.json.2147483646.tmp'), '{"half":');
    writeFileSync(path.join(dir, `state.json.${process.ppid}.tmp`), '{}');
    writeFileSync(path.join(dir, 'other.json.2147483646.tmp'), '{}');
    const s = await FileStateStore.open(file);
    expect(readdirSync(dir)).toHaveLength(3); // reading leaves everything alone (`plan` only reads)
    await s.set('a', 1);
    expect(readdirSync(dir).sort()).toEqual([
      'other.json.2147483646.tmp',
      'state.json',
      `state.json.${process.ppid}.tmp`,
    ]);
  });
});
