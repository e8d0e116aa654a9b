/**
 * One attempt at a unit: read it and commit it into the sinks that still need it, by one of two paths.
 *
 * - JS path: `source.read()` → transforms → every sink's `writeUnit`.
 * - Raw path (no transforms, the source hands over a raw file, every pending sink loads some format natively):
 *   when every pending sink lists the file's format, each loads the file itself (`writeUnitFile`); a sink that
 *   refuses the file (`NativeLoadRefused`), or every sink when not all of them can read the format, gets the file
 *   decoded in JS with the source's own decode options. Those options are what `read()` uses, so both paths give
 *   the same records (test/engine/fast-path-parity.test.ts) and the JS decoder dead-letters bad records one by one.
 *
 * A sink whose schema contract is not `evolve` takes rows only: its gate (schema-gate.ts) judges each row, which a
 * native load would not let it see.
 */
import { createReadStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { NativeLoadRefused } from '../../core/errors.js';
import type {
  Batch,
  CommitResult,
  Logger,
  RawFile,
  Sink,
  Source,
  SourceContext,
  UnitCommit,
  WorkUnit,
} from '../../core/types.js';
import { decode } from '../../decode/index.js';
import { isEvolve } from '../../schema/contract.js';
import { transformed, type TransformChainOptions } from './transform-chain.js';
import { contractOf, judgesOf, writeToSinks, type SinkWriting } from './write-sinks.js';

export interface LoadUnitOptions {
  /** The source as this attempt reads it (engine/cursor.ts `checkpointedRead`). */
  source: Source;
  /** What every sink commits with the unit's rows: its cursor checkpoint. */
  commit: UnitCommit;
  sctx: SourceContext;
  log: Logger;
  chain: Omit<TransformChainOptions, 'first'>;
  /** Index of the first transform for a unit (dead-letter replay). */
  firstTransform?: (u: WorkUnit) => number;
  /** The pipeline allows the raw path (`fast_path` not false) and has no transform. */
  rawPath: boolean;
  /** Where sources download raw files. */
  tmpDir: string;
  /** Told of each unit whose file some sink loaded natively. */
  onNativeLoad?(unit: WorkUnit): void;
  /** Told of each unit whose file a sink refused to load natively. */
  onNativeFallback?(unit: WorkUnit, refusals: NativeLoadRefused[]): void;
  /** The sinks' schema contracts, where their dead letters go, and who hears of each commit. */
  writing?: SinkWriting;
}

/** Whether a sink could load some raw file natively at all. */
function loadsNatively(s: Sink): boolean {
  return s.writeUnitFile !== undefined && s.capabilities.nativeFormats.length > 0;
}

export async function loadUnit(u: WorkUnit, sinkUnit: WorkUnit, sinks: Sink[], opts: LoadUnitOptions): Promise<void> {
  const { source } = opts;
  const native = (s: Sink): boolean => loadsNatively(s) && isEvolve(contractOf(s, opts.writing));
  if (opts.rawPath && source.rawFile && sinks.every(native)) {
    await mkdir(opts.tmpDir, { recursive: true });
    const raw = await source.rawFile(u, opts.sctx, opts.tmpDir);
    try {
      await loadRawFile(u, sinkUnit, sinks, raw, opts);
    } finally {
      if (raw.temporary) await rm(raw.path, { force: true });
    }
    return;
  }
  const first = opts.firstTransform?.(u) ?? 0;
  await writeToSinks(
    sinkUnit,
    sinks,
    transformed(u, source.read(u, opts.sctx), { ...opts.chain, first }),
    opts.commit,
    opts.writing,
    u.id,
  );
}

async function loadRawFile(
  u: WorkUnit,
  sinkUnit: WorkUnit,
  sinks: Sink[],
  raw: RawFile,
  opts: LoadUnitOptions,
): Promise<void> {
  const format = raw.decode.format;
  const native = sinks.every((s) => s.capabilities.nativeFormats.includes(format));
  if (!native) {
    await writeToSinks(sinkUnit, sinks, decodedInJs(u, raw, opts), opts.commit, opts.writing, u.id);
    return;
  }
  // Each sink's native load checks every record with the sink's judge, and refuses the file at the first it refuses.
  const judges = judgesOf(opts.writing);
  const outcomes = await Promise.allSettled(
    sinks.map(async (s) => s.writeUnitFile!(sinkUnit, raw, opts.commit, await judges.for(s))),
  );
  const failed = outcomes.find(
    (o): o is PromiseRejectedResult => o.status === 'rejected' && !(o.reason instanceof NativeLoadRefused),
  );
  if (failed) throw failed.reason;
  const refused = sinks.filter((_, i) => outcomes[i]!.status === 'rejected');
  outcomes.forEach((o, i) => {
    if (o.status === 'fulfilled') opts.writing?.onCommit?.(sinks[i]!, o.value);
  });
  if (refused.length < sinks.length) opts.onNativeLoad?.(u);
  if (refused.length === 0) {
    // Every sink read the same records: count them once.
    const loaded = outcomes as PromiseFulfilledResult<CommitResult>[];
    opts.chain.counters.records += Math.max(0, ...loaded.map((o) => o.value.records));
    return;
  }
  const refusals = outcomes.flatMap((o) => (o.status === 'rejected' ? [o.reason as NativeLoadRefused] : []));
  opts.onNativeFallback?.(u, refusals);
  await writeToSinks(sinkUnit, refused, decodedInJs(u, raw, opts), opts.commit, opts.writing, u.id);
}

function decodedInJs(u: WorkUnit, raw: RawFile, opts: LoadUnitOptions): AsyncIterable<Batch> {
  const bytes = createReadStream(raw.path, { highWaterMark: 1 << 16 });
  const batches = decode(bytes, { ...raw.decode, unit: u.id, deadLetter: opts.sctx.deadLetter });
  return transformed(u, batches, { ...opts.chain, first: opts.firstTransform?.(u) ?? 0 });
}
