/**
 * The order vitest starts test files in. Its own order runs the longest files first when it has their durations
 * from an earlier run (node_modules/.vite/vitest); on a fresh clone (CI, a new contributor) it has none and starts
 * the largest files first, which left the crash matrix's short files, the longest to run, for last: one worker ran
 * them alone while the other sat idle. Without durations, the files that spawn the CLI or run the reliability
 * matrices start first.
 */
import path from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** Where the files that take longest are (a path prefix), longest first. */
const SLOW_FIRST = [
  'test/sinks/conformance/',
  'test/reliability/crash-matrix/',
  'test/reliability/fault-matrix',
  'test/e2e/',
  'test/reliability/',
];

export default class SlowFilesFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const byDuration = await super.sort(files);
    const root = this.ctx.config.root;
    const key = (f: TestSpecification): string => `${f.project.name}:${path.relative(root, f.moduleId)}`;
    if (byDuration.some((f) => this.ctx.cache.getFileTestResults(key(f)))) return byDuration;
    const rank = (f: TestSpecification): number => {
      const i = SLOW_FIRST.findIndex((prefix) => path.relative(root, f.moduleId).startsWith(prefix));
      return i === -1 ? SLOW_FIRST.length : i;
    };
    // Array.prototype.sort is stable: within a rank, vitest's own order stays.
    return byDuration.sort((a, b) => rank(a) - rank(b));
  }
}
