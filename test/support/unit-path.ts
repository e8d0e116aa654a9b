/** A unit path (src/unit/unit-path.ts) over in-memory parts, as a run builds it, for the unit layer's tests. */
import type { Sink, Source } from '../../src/core/types.js';
import { EVOLVE, type SchemaContract } from '../../src/schema/contract.js';
import type { TransformLetter, UnitPathParts } from '../../src/unit/unit-path.js';
import { UnitPath } from '../../src/unit/unit-path.js';
import { counters, recordingLogger, sourceContext, tempDir } from './in-memory.js';

export interface TestPath {
  path: UnitPath;
  parts: UnitPathParts;
  /** Every dead letter, transforms' and sinks' alike. */
  letters: TransformLetter[];
  log: ReturnType<typeof recordingLogger>;
}

export function unitPath(
  source: Source,
  sinks: readonly Sink[],
  over: Partial<UnitPathParts> & { contracts?: ReadonlyMap<Sink, SchemaContract> } = {},
): TestPath {
  const letters: TransformLetter[] = [];
  const log = recordingLogger();
  const { contracts, ...rest } = over;
  const parts: UnitPathParts = {
    source,
    context: (signal) => sourceContext({ log, signal }),
    transforms: [],
    sinks: sinks.map((sink) => ({ sink, contract: contracts?.get(sink) ?? EVOLVE, unstorable: 'dead_letter' })),
    fastPath: true,
    tmpDir: tempDir(),
    log,
    counters: counters(),
    deadLetter: (d) => void letters.push(d as TransformLetter),
    ...rest,
  };
  return { path: new UnitPath(parts), parts, letters, log };
}

/** A signal that never aborts, for one attempt. */
export const attempt = (): AbortSignal => new AbortController().signal;
