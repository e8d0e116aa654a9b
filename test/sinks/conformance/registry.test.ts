/**
 * A sink is in the conformance suite by being in the registry: every registered sink type has a target in the
 * suite's table (targets.ts), a file sink that writes to S3 has an S3 target beside its local one, and every target
 * names a registered type and the failpoints of its commit path. Adding a sink to sinks/index.ts without a target
 * fails here.
 */
import { describe, expect, it } from 'vitest';
import { FAILPOINTS } from '../../../src/core/failpoints.js';
import { sinkDefs } from '../../../sinks/index.js';
import { ALL_TARGETS as TARGETS } from './targets.js';

/** Whether the sink's config accepts `s3` (the file sinks' option for `path: s3://…`). */
function writesToS3(type: string): boolean {
  const def = sinkDefs.find((d) => d.type === type)!;
  const shape = (def.schema as unknown as { shape?: Record<string, unknown> }).shape;
  return shape !== undefined && 's3' in shape;
}

describe('the conformance suite covers the registry', () => {
  it('has a target for every registered sink, and an S3 target for every sink that writes to S3', () => {
    const targeted = new Set(TARGETS.map((t) => t.type));
    expect(sinkDefs.map((d) => d.type).filter((type) => !targeted.has(type))).toEqual([]);
    const onS3 = new Set(TARGETS.filter((t) => t.storage === 's3').map((t) => t.type));
    expect(sinkDefs.map((d) => d.type).filter((type) => writesToS3(type) && !onS3.has(type))).toEqual([]);
  });

  it('names only registered types, each target once, and real failpoints for every write mode', () => {
    const registered = new Set(sinkDefs.map((d) => d.type));
    expect(TARGETS.map((t) => t.type).filter((type) => !registered.has(type))).toEqual([]);
    expect(new Set(TARGETS.map((t) => t.name)).size).toBe(TARGETS.length);
    for (const t of TARGETS)
      for (const list of Object.values(t.failpoints)) {
        expect(list.length, t.name).toBeGreaterThan(0);
        for (const f of list) expect(Object.keys(FAILPOINTS), `${t.name}: ${f}`).toContain(f.split('=')[0]);
      }
  });
});
