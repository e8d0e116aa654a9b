/** Which published files a compaction rewrites, and in which groups (output-files/compact.ts). */
import { describe, expect, it } from 'vitest';
import { planCompaction } from '../../../src/sink-kit/output-files/compact.js';

const KB = 1024;

describe('planCompaction', () => {
  it('groups the small files of each partition, in name order, up to the target size', () => {
    const sizes = new Map([
      ['c=US/part-1-0.parquet', 30 * KB],
      ['c=US/part-2-0.parquet', 40 * KB],
      ['c=US/part-3-0.parquet', 40 * KB],
      ['c=US/part-4-0.parquet', 10 * KB],
      ['c=US/part-5-0.parquet', 10 * KB],
      ['c=DE/part-1-0.parquet', 10 * KB],
    ]);
    expect(planCompaction(sizes, 100 * KB, 2)).toEqual([
      // DE's one small file has nothing to join.
      { dir: 'c=US', files: ['c=US/part-1-0.parquet', 'c=US/part-2-0.parquet', 'c=US/part-3-0.parquet'] },
      { dir: 'c=US', files: ['c=US/part-4-0.parquet', 'c=US/part-5-0.parquet'] },
    ]);
  });

  it('leaves files of half the target or more, and partitions with fewer small files than asked', () => {
    const sizes = new Map([
      ['part-a.jsonl', 60 * KB],
      ['part-b.jsonl', 10 * KB],
      ['part-c.jsonl', 10 * KB],
    ]);
    expect(planCompaction(sizes, 100 * KB, 2)).toEqual([{ dir: '.', files: ['part-b.jsonl', 'part-c.jsonl'] }]);
    expect(planCompaction(sizes, 100 * KB, 3)).toEqual([]);
  });
});
