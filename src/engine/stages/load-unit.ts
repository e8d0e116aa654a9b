/**
 * One attempt at a unit: read it and commit it into the sinks that still need it, by one of two paths.
 *
 * - JS path: `source.read()` → transforms → every sink's `writeUnit`.
 * - Raw path (no transforms, the source hands over a raw file, every pending sink loads some format natively:
 *   decided before reading, `wantsRawFile`): when every pending sink lists the file's format (decided when the file
 *   arrives, `allReadNatively`), each loads the file itself (`writeUnitFile`); otherwise every sink gets the file
 *   decoded in JS with the source's own decode options. Only a refusal that reading alone can find (a hostile
 *   record mid-file: `NativeLoadRefused`) sends that sink to the JS decoder after it tried. Those options are what
 *   `read()` uses, so both paths give the same records (test/engine/fast-path-parity.test.ts) and the JS decoder
 *   dead-letters bad records one by one.
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
  /** The sinks' schema contracts, where their dead letters go, and who hears of each commit. */
  writing?: SinkWriting;
}

/**
 * How a unit was loaded, handed back to the caller (the run counts native loads and fallbacks from it):
 * `rows`: read by the source; `native`: its raw file loaded natively by at least one sink; `decoded`: its raw file
 * decoded in JS for every sink. `refusals`: the sinks that refused the file while loading it.
 */
export interface UnitLoad {
  path: 'rows' | 'native' | 'decoded';
  refusals: NativeLoadRefused[];
}

/**
 * Decided before anything is read, from what the pipeline and the sinks declare: the raw file is asked for only when
 * the raw path is allowed, the source hands raw files over, and every pending sink loads some format natively and
 * takes the file whole (an `evolve` contract).
 */
export function wantsRawFile(source: Source, sinks: readonly Sink[], opts: LoadUnitOptions): boolean {
  const native = (s: Sink): boolean =>
    s.writeUnitFile !== undefined && s.capabilities.nativeFormats.length > 0 && isEvolve(contractOf(s, opts.writing));
  return opts.rawPath && source.rawFile !== undefined && sinks.every(native);
}

/** Decided as soon as the file's format is known (it comes with the file): whether every sink reads it natively. */
export function allReadNatively(sinks: readonly Sink[], file: RawFile): boolean {
  return sinks.every((s) => s.capabilities.nativeFormats.includes(file.decode.format));
}

export async function loadUnit(
  u: WorkUnit,
  sinkUnit: WorkUnit,
  sinks: Sink[],
  opts: LoadUnitOptions,
): Promise<UnitLoad> {
  const { source } = opts;
  if (!wantsRawFile(source, sinks, opts)) {
    const first = opts.firstTransform?.(u) ?? 0;
    const batches = transformed(u, source.read(u, opts.sctx), { ...opts.chain, first });
    await writeToSinks(sinkUnit, sinks, batches, opts.commit, opts.writing, u.id);
    return { path: 'rows', refusals: [] };
  }
  await mkdir(opts.tmpDir, { recursive: true });
  const raw = await source.rawFile!(u, opts.sctx, opts.tmpDir);
  try {
    if (allReadNatively(sinks, raw)) return await loadNatively(u, sinkUnit, sinks, raw, opts);
    await writeToSinks(sinkUnit, sinks, decodedInJs(u, raw, opts), opts.commit, opts.writing, u.id);
    return { path: 'decoded', refusals: [] };
  } finally {
    if (raw.temporary) await rm(raw.path, { force: true });
  }
}

/**
 * Every sink loads the file natively. What only reading the file can tell — a record in its middle that the sink's
 * judge refuses, a line its native reader cannot parse, gzip that breaks off — comes back as the sink's
 * `NativeLoadRefused` while it loads: that sink (and only it) gets the file decoded in JS. This one exception stays:
 * knowing it up front would mean reading the file twice.
 */
async function loadNatively(
  u: WorkUnit,
  sinkUnit: WorkUnit,
  sinks: Sink[],
  raw: RawFile,
  opts: LoadUnitOptions,
): Promise<UnitLoad> {
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
  if (refused.length === 0) {
    // Every sink read the same records: count them once.
    const loaded = outcomes as PromiseFulfilledResult<CommitResult>[];
    opts.chain.counters.records += Math.max(0, ...loaded.map((o) => o.value.records));
    return { path: 'native', refusals: [] };
  }
  const refusals = outcomes.flatMap((o) => (o.status === 'rejected' ? [o.reason as NativeLoadRefused] : []));
  await writeToSinks(sinkUnit, refused, decodedInJs(u, raw, opts), opts.commit, opts.writing, u.id);
  return { path: refused.length < sinks.length ? 'native' : 'decoded', refusals };
}

function decodedInJs(u: WorkUnit, raw: RawFile, opts: LoadUnitOptions): AsyncIterable<Batch> {
  const bytes = createReadStream(raw.path, { highWaterMark: 1 << 16 });
  const batches = decode(bytes, { ...raw.decode, unit: u.id, deadLetter: opts.sctx.deadLetter });
  return transformed(u, batches, { ...opts.chain, first: opts.firstTransform?.(u) ?? 0 });
}
