import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { pipelinePaths } from '../../src/state/paths.js';

const p = { baseDir: '/srv/p', name: 'nightly', config: {} } as Parameters<typeof pipelinePaths>[0];

describe('pipelinePaths', () => {
  it('an unsharded run uses the pipeline state directory itself', () => {
    const paths = pipelinePaths(p);
    expect(paths.stateDir).toBe('/srv/p/.sluice/nightly');
    expect(paths.rootStateDir).toBe(paths.stateDir);
    expect(paths.tmpDir).toBe('/srv/p/.sluice/nightly/tmp');
  });

  it('shards started together share nothing they write: state, temp files, lock, dead letters', () => {
    const shards = [0, 1, 2, 3].map((index) => pipelinePaths(p, { index, count: 4 }));
    for (const key of ['stateDir', 'stateFile', 'tmpDir', 'lockFile', 'deadLetterFile'] as const)
      expect(new Set(shards.map((s) => s[key])).size, key).toBe(4);
    expect(shards[2]!.tmpDir).toBe('/srv/p/.sluice/nightly/shard-2-of-4/tmp');
    for (const s of shards) expect(s.rootStateDir).toBe('/srv/p/.sluice/nightly');
  });

  it('a configured dead-letter file gets one sibling per shard', () => {
    const cfg = { ...p, config: { dead_letter: 'dl/bad.jsonl' } } as Parameters<typeof pipelinePaths>[0];
    expect(pipelinePaths(cfg).deadLetterFile).toBe(path.resolve('/srv/p/dl/bad.jsonl'));
    expect(pipelinePaths(cfg, { index: 1, count: 4 }).deadLetterFile).toBe('/srv/p/dl/bad.shard-1-of-4.jsonl');
  });
});
