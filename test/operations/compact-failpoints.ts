/**
 * The failpoints a compaction passes, in the order they strike (sinks/output-files/compact.ts): the kill tests of
 * test/engine/compact.test.ts strike each (CI), and the crash matrix's check that every failpoint is struck counts them.
 */
import type { FailpointName } from '../../src/core/failpoints.js';

export const COMPACT_FAILPOINTS: readonly FailpointName[] = [
  'compact:written',
  'files:before-manifest',
  'files:after-manifest',
  'files:after-rename',
  'compact:after-remove',
];
