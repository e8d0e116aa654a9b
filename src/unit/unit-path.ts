/**
 * One unit's path, top to bottom: the source reads the unit → its bytes are decoded → the pipeline's transforms →
 * for each sink that still needs the unit: the store gate (what its store cannot hold goes to the dead letters) →
 * the schema-contract gate → the sink commits the rows together with the unit's checkpoint. Built once per run by
 * the runtime from what every unit shares; `load()` is one attempt at one unit, and reads as that sentence does.
 *
 * The checkpoint travels with the records: the source's read ends with it (`UnitEnd`, the iterator's return value),
 * and a sink asks for it as it commits, after the last batch (`UnitCommit`: asked earlier, it throws
 * `CheckpointNotFinal`). A raw file carries its own (`RawFile.checkpoint`).
 *
 * The raw path: when the pipeline has no transform, the source hands over raw files, and every sink that needs the
 * unit loads files natively under an `evolve` contract, the unit's file is loaded by each sink itself — decided here
 * and nowhere else (`takesRawFile`). A sink whose native reader does not take the file's format, or refuses the file
 * while loading it (a hostile record mid-file: `NativeLoadRefused`), gets it decoded in JS with the source's own
 * decode options, which are what `read()` uses: both paths give the same rows (test/unit/fast-path-parity.test.ts).
 */
import { createReadStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { CheckpointNotFinal, knownCheckpoint } from '../core/checkpoint.js';
import { NativeLoadRefused } from '../core/errors.js';
import type {
  Batch,
  CommitResult,
  Counters,
  DeadLetter,
  DeadLetterFn,
  Logger,
  RawFile,
  Sink,
  Source,
  SourceContext,
  Transform,
  TransformContext,
  UnitCommit,
  UnitEnd,
  UnitRead,
  UnstorablePolicy,
  WorkUnit,
} from '../core/types.js';
import { decode } from '../decode/index.js';
import { isEvolve, type SchemaContract } from '../schema/contract.js';
import { gated, SchemaContractError } from './schema-gate.js';
import { judged, SinkJudges } from './store-gate.js';
import { tee } from './tee.js';

export interface BuiltTransform {
  type: string;
  fn: Transform;
}

/** A sink as the path writes it: the sink, its schema contract, and what it does with a record it cannot store. */
export interface PathSink {
  sink: Sink;
  contract: SchemaContract;
  unstorable: UnstorablePolicy;
}

/** What a transform's dead letter carries beyond the letter itself (read back by dead-letter replay). */
export type TransformLetter = DeadLetter & { step: number; index: number; unit_params: Record<string, unknown> };

/** What every unit of a run shares. */
export interface UnitPathParts {
  source: Source;
  /** The run's source context for one attempt, which reads under its own signal (made by the runtime). */
  context(signal: AbortSignal): SourceContext;
  transforms: readonly BuiltTransform[];
  sinks: readonly PathSink[];
  /** The pipeline allows the raw path (`fast_path` is not false). */
  fastPath: boolean;
  /** Where sources download raw files. */
  tmpDir: string;
  log: Logger;
  /** `records`: what leaves the transforms (or a native load), counted once per unit however many sinks took it. */
  counters: Counters;
  deadLetter: DeadLetterFn;
  /** The transform a unit enters at (dead-letter replay: where its letters were rejected). Default: the first. */
  firstTransform?(unit: WorkUnit): number;
  /** Told of each commit as it is made, also when another sink of the unit then fails (the run's tally). */
  committed?(unit: WorkUnit, sink: Sink, result: CommitResult): void;
}

/**
 * How one attempt loaded a unit: `rows`, read by the source; `native`, its raw file loaded natively by at least one
 * sink; `decoded`, its raw file decoded in JS for every sink. `refusals`: the sinks that refused the file natively
 * and took it decoded. `next`: the units the read led to (the next crawl page).
 */
export interface UnitLoaded {
  path: 'rows' | 'native' | 'decoded';
  refusals: readonly NativeLoadRefused[];
  next: readonly WorkUnit[];
}

export class UnitPath {
  private readonly judges: SinkJudges;

  constructor(private readonly parts: UnitPathParts) {
    this.judges = new SinkJudges((sink) => this.parts.sinks.find((s) => s.sink === sink)?.unstorable ?? 'dead_letter');
  }

  /**
   * One attempt: `unit` read (as the source knows it) and committed into `into` (the sinks that have not committed
   * it yet) as `sinkUnit` (the run-scoped id the sinks see), reading under `signal`. `readDone` is told when the
   * unit's reading is over before it has committed (its raw file read by every sink that loads it natively).
   */
  async load(
    unit: WorkUnit,
    sinkUnit: WorkUnit,
    into: readonly Sink[],
    signal: AbortSignal,
    readDone: () => void = () => undefined,
  ): Promise<UnitLoaded> {
    const ctx = this.parts.context(signal);
    const sinks = this.parts.sinks.filter((s) => into.includes(s.sink));
    if (this.takesRawFile(sinks)) return this.loadRawFile(unit, sinkUnit, sinks, ctx, readDone);
    // Read (the source decodes what it downloads as it reads) → transforms → each sink's gates and commit.
    const read = new DrainedRead(unit.id, this.parts.source.read(unit, ctx));
    await this.commit(unit, sinkUnit, sinks, this.transformed(unit, read), read.commit);
    // A sink may have found the unit committed and not read it: then the source's state says where it leads.
    const next = read.ended?.next ?? this.parts.source.discover?.(unit, ctx) ?? [];
    return { path: 'rows', refusals: [], next };
  }

  /**
   * Decided before anything is read: the raw file is asked for only when the pipeline allows the raw path and has no
   * transform, the source hands raw files over, and every sink loads some format natively and takes the file whole
   * (an `evolve` contract: a gate must see every row).
   */
  private takesRawFile(sinks: readonly PathSink[]): boolean {
    const { fastPath, transforms, source } = this.parts;
    return (
      fastPath &&
      transforms.length === 0 &&
      source.rawFile !== undefined &&
      sinks.every((s) => s.sink.capabilities.native !== undefined && isEvolve(s.contract))
    );
  }

  /**
   * When every sink's native reader takes the file's format, each loads the file itself; otherwise every sink gets
   * it decoded in JS (read once for all). What only reading the file can tell (a record a sink's judge refuses, a line
   * its reader cannot parse, gzip that breaks off) comes back as that sink's `NativeLoadRefused`, and that sink alone
   * then gets the file decoded in JS.
   */
  private async loadRawFile(
    unit: WorkUnit,
    sinkUnit: WorkUnit,
    sinks: readonly PathSink[],
    ctx: SourceContext,
    readDone: () => void,
  ): Promise<UnitLoaded> {
    // Every sink that commits units together knows this one is on its way while the source reads it.
    const coming = sinks.map((s) => once(s.sink.capabilities.native!.expecting?.()));
    try {
      await mkdir(this.parts.tmpDir, { recursive: true });
      const raw = await this.parts.source.rawFile!(unit, ctx, this.parts.tmpDir);
      return await this.loadRaw(unit, sinkUnit, sinks, ctx, raw, coming, readDone);
    } finally {
      for (const gone of coming) gone();
    }
  }

  private async loadRaw(
    unit: WorkUnit,
    sinkUnit: WorkUnit,
    sinks: readonly PathSink[],
    ctx: SourceContext,
    raw: RawFile,
    coming: readonly (() => void)[],
    readDone: () => void,
  ): Promise<UnitLoaded> {
    const commit = knownCheckpoint(raw.checkpoint);
    try {
      if (!sinks.every((s) => s.sink.capabilities.native!.formats.includes(raw.decode.format))) {
        // Not coming natively after all: a sink's group must not wait for it.
        for (const gone of coming) gone();
        await this.commit(unit, sinkUnit, sinks, this.transformed(unit, this.decoded(unit, raw, ctx)), commit);
        return { path: 'decoded', refusals: [], next: [] };
      }
      // The unit's reading is over once every sink has read the file and has only its commit left; a sink that
      // refuses the file has it decoded in JS next, which is reading still.
      let reading = sinks.length;
      const readBy = (k: number): (() => void) =>
        once(() => {
          coming[k]!();
          if (--reading === 0) readDone();
        });
      const outcomes = await Promise.allSettled(
        sinks.map(async (s, k) => {
          try {
            return await s.sink.capabilities.native!.load(
              sinkUnit,
              raw,
              commit,
              await this.judges.for(s.sink),
              readBy(k),
            );
          } finally {
            coming[k]!();
          }
        }),
      );
      const failed = outcomes.find(
        (o): o is PromiseRejectedResult => o.status === 'rejected' && !(o.reason instanceof NativeLoadRefused),
      );
      const loaded = outcomes.flatMap((o, i) => (o.status === 'fulfilled' ? [{ s: sinks[i]!, r: o.value }] : []));
      for (const { s, r } of loaded) this.parts.committed?.(unit, s.sink, r);
      if (failed) throw failed.reason;
      const refused = sinks.filter((_, i) => outcomes[i]!.status === 'rejected');
      if (refused.length === 0) {
        // Every sink read the same records: counted once.
        this.parts.counters.records += Math.max(0, ...loaded.map(({ r }) => r.records));
        return { path: 'native', refusals: [], next: [] };
      }
      const refusals = outcomes.flatMap((o) => (o.status === 'rejected' ? [o.reason as NativeLoadRefused] : []));
      await this.commit(unit, sinkUnit, refused, this.transformed(unit, this.decoded(unit, raw, ctx)), commit);
      return { path: loaded.length > 0 ? 'native' : 'decoded', refusals, next: [] };
    } finally {
      if (raw.temporary) await rm(raw.path, { force: true });
    }
  }

  /** A raw file decoded in JS with the source's own decode options: the records `read()` would have yielded. */
  private decoded(unit: WorkUnit, raw: RawFile, ctx: SourceContext): AsyncIterable<Batch> {
    const bytes = createReadStream(raw.path, { highWaterMark: 1 << 16 });
    return decode(bytes, { ...raw.decode, unit: unit.id, deadLetter: ctx.deadLetter });
  }

  /**
   * The unit's batches through the pipeline's transforms (from the unit's first: a replayed letter re-enters where it
   * was rejected), each transform's dead letters marked with where it was. What leaves is the run's records read.
   */
  private transformed(unit: WorkUnit, batches: AsyncIterable<Batch>): AsyncIterable<Batch> {
    const first = this.parts.firstTransform?.(unit) ?? 0;
    this.parts.transforms.forEach((t, step) => {
      if (step < first) return;
      // The ordinal tells two records rejected by one transform with the same reason apart.
      let index = 0;
      const tctx: TransformContext = {
        log: this.parts.log,
        deadLetter: (d) => {
          const letter: TransformLetter = { ...d, step, index: index++, unit_params: { ...unit.params } };
          this.parts.deadLetter(letter);
        },
        unitId: unit.id,
        unitParams: unit.params,
      };
      batches = t.fn(batches, tctx);
    });
    return counted(batches, this.parts.counters);
  }

  /**
   * One stream of batches into several sinks at once, each committing on its own through its own store gate and (when
   * its contract is not `evolve`) its schema-contract gate. Every sink is let finish (commit or fail) before the unit's
   * outcome is told: a sink still writing when the run closes its sinks would be cut off mid-commit.
   */
  private async commit(
    unit: WorkUnit,
    sinkUnit: WorkUnit,
    sinks: readonly PathSink[],
    batches: AsyncIterable<Batch>,
    commit: UnitCommit,
  ): Promise<void> {
    const streams = tee(batches, sinks.length);
    const outcomes = await Promise.allSettled(
      sinks.map(async ({ sink, contract }, k) => {
        const stream = streams[k]!;
        try {
          const judge = await this.judges.for(sink);
          const letters = { sink, unitId: unit.id, deadLetter: this.parts.deadLetter };
          const storable = judge ? judged(stream, judge, { ...letters, log: this.parts.log }) : stream;
          // Under `evolve` the rows go to the sink without a contract gate: it costs nothing there.
          const input = isEvolve(contract)
            ? storable
            : gated(storable, { ...letters, contract, columns: await sink.currentColumns() });
          const result = await sink.writeUnit(sinkUnit, input, commit).catch((err: unknown) => {
            // Whatever the sink made of the gate's refusal, the refusal is the cause.
            throw contractRefusal(err) ?? err;
          });
          this.parts.committed?.(unit, sink, result);
        } finally {
          // A sink that found the unit committed returns without reading, and one that failed stops reading: its
          // share of the stream is released, or the other sinks would wait for it.
          await stream[Symbol.asyncIterator]().return?.();
        }
      }),
    );
    const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
    if (failed) throw failed.reason;
  }
}

/**
 * A source's read as the sinks take it: its batches, and — once they are drained — what the read ended with. The
 * checkpoint is handed to the sinks through `commit`, which each sink asks as it commits.
 */
class DrainedRead implements AsyncIterable<Batch> {
  /** What the read ended with, once it was drained. */
  ended: UnitEnd | undefined;
  readonly commit: UnitCommit = {
    checkpoint: () => {
      if (this.ended === undefined) throw new CheckpointNotFinal(this.unitId);
      return this.ended.checkpoint;
    },
  };

  constructor(
    private readonly unitId: string,
    private readonly read: UnitRead,
  ) {}

  async *[Symbol.asyncIterator](): AsyncIterator<Batch> {
    const it = this.read[Symbol.asyncIterator]();
    try {
      for (;;) {
        const r = await it.next();
        if (r.done) {
          // Before the sinks see the end of the stream: they ask for the checkpoint then.
          this.ended = r.value ?? {};
          return;
        }
        yield r.value;
      }
    } finally {
      // A consumer that stops early (a failed sink) closes the source's read too.
      if (this.ended === undefined) await it.return?.();
    }
  }
}

async function* counted(batches: AsyncIterable<Batch>, counters: Counters): AsyncIterable<Batch> {
  for await (const b of batches) {
    counters.records += b.length;
    yield b;
  }
}

/** The gate's refusal behind a sink's error, if that is what it is. */
function contractRefusal(err: unknown): SchemaContractError | undefined {
  for (let e = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++)
    if (e instanceof SchemaContractError) return e;
  return undefined;
}

/** `fn` (or nothing) callable any number of times, run once. */
function once(fn: (() => void) | undefined): () => void {
  let called = false;
  return () => {
    if (called) return;
    called = true;
    fn?.();
  };
}
