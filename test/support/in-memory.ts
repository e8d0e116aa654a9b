/**
 * In-memory sources and sinks for the runtime's and the unit path's tests: they keep what they were asked in arrays, so a test
 * checks what the engine did without HTTP, a database or output files. Only the raw-file fast path touches disk
 * (a raw file is a file by contract).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { NativeLoadRefused } from '../../src/core/errors.js';
import type {
  Batch,
  CommitResult,
  Counters,
  DeadLetter,
  Logger,
  RawFile,
  RawFormat,
  Row,
  Sink,
  SinkCapabilities,
  SinkContext,
  Source,
  SourceContext,
  QueryableOutput,
  UnitCommit,
  UnitEnd,
  WorkUnit,
} from '../../src/core/types.js';
import { MemoryStateStore } from '../../src/state/state-store.js';
import { PaidLedger } from '../../src/state/paid-ledger.js';
import { describeType, type LogicalType } from '../../src/core/logical-type.js';

export function tempDir(): string {
  return mkdtempSync(path.join(tmpdir(), 'sluice-engine-'));
}

/** A logger that keeps its lines as `level: message`. */
export function recordingLogger(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const at = (level: string) => (msg: string) => void lines.push(`${level}: ${msg}`);
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

export function counters(): Counters {
  return { records: 0, bytes: 0, retries: 0, deadLetters: 0 };
}

export function sourceContext(over: Partial<SourceContext> = {}): SourceContext & { letters: DeadLetter[] } {
  const letters: DeadLetter[] = [];
  const state = over.state ?? new MemoryStateStore();
  return {
    signal: new AbortController().signal,
    log: recordingLogger(),
    state,
    paid: PaidLedger.open(state, 1),
    counters: counters(),
    deadLetter: (d) => void letters.push(d),
    baseDir: tempDir(),
    dryRun: false,
    ...over,
    letters,
  };
}

export interface MemoryUnit {
  id: string;
  rows: Row[];
  params?: Record<string, unknown>;
  /** Units this one leads to: handed on as its read ends, or by `discover` when it was skipped. */
  next?: MemoryUnit[];
}

export interface MemorySourceOptions {
  concurrency?: number;
  /** Hand over each unit's rows as a raw file of this format (written to the engine's tmpDir). */
  rawFormat?: 'jsonl' | 'csv';
  /** Errors `read`/`rawFile` throw, in order, before succeeding for a unit. */
  failures?: Record<string, unknown[]>;
  /** Called as a unit's read starts. */
  onRead?: (id: string) => void;
  /** Units whose read waits until the run's signal aborts, then throws its reason (a download cut short). */
  hang?: string[];
  /** An incremental source: each unit's read ends with this checkpoint (given its rows), as does its raw file. */
  checkpoint?: (unit: WorkUnit, rows: readonly Row[]) => unknown;
}

/** Units with fixed rows. Records every read so tests see what the engine read. */
export class MemorySource implements Source {
  readonly concurrency: number;
  readonly incremental: boolean;
  readonly reads: string[] = [];
  readonly rawFiles: RawFile[] = [];
  readonly rawFile?: (unit: WorkUnit, ctx: SourceContext, tmpDir: string) => Promise<RawFile>;
  closed = false;
  private readonly byId = new Map<string, MemoryUnit>();

  constructor(
    private readonly units: MemoryUnit[],
    private readonly opts: MemorySourceOptions = {},
  ) {
    this.concurrency = opts.concurrency ?? 4;
    this.incremental = opts.checkpoint !== undefined;
    const index = (us: MemoryUnit[]): void =>
      us.forEach((u) => {
        this.byId.set(u.id, u);
        index(u.next ?? []);
      });
    index(units);
    if (opts.rawFormat) this.rawFile = (u, _ctx, dir) => this.writeRawFile(u, dir, opts.rawFormat!);
  }

  async plan(_ctx: SourceContext): Promise<WorkUnit[]> {
    return this.units.map(asWorkUnit);
  }

  async *read(unit: WorkUnit, ctx: SourceContext): AsyncGenerator<Batch, UnitEnd> {
    this.reads.push(unit.id);
    this.opts.onRead?.(unit.id);
    if (this.opts.hang?.includes(unit.id)) await untilAborted(ctx.signal);
    this.failNext(unit.id);
    const rows = this.byId.get(unit.id)!.rows;
    if (rows.length > 0) yield rows.map((r) => ({ ...r }));
    return { next: this.discover(unit), ...this.checkpointOf(unit) };
  }

  private checkpointOf(unit: WorkUnit): { checkpoint?: unknown } {
    return this.opts.checkpoint ? { checkpoint: this.opts.checkpoint(unit, this.byId.get(unit.id)!.rows) } : {};
  }

  discover(unit: WorkUnit): WorkUnit[] {
    return (this.byId.get(unit.id)?.next ?? []).map(asWorkUnit);
  }

  async close(): Promise<void> {
    this.closed = true;
  }

  private async writeRawFile(unit: WorkUnit, dir: string, format: 'jsonl' | 'csv'): Promise<RawFile> {
    this.failNext(unit.id);
    const rows = this.byId.get(unit.id)!.rows;
    const file = path.join(dir, `${unit.id.replace(/[^a-z0-9]/gi, '_')}.${format}`);
    writeFileSync(file, format === 'jsonl' ? rows.map((r) => JSON.stringify(r) + '\n').join('') : csvOf(rows));
    const raw: RawFile = {
      path: file,
      decode: format === 'csv' ? { format, jsonColumns: 'auto' } : { format },
      temporary: true,
      ...this.checkpointOf(unit),
    };
    this.rawFiles.push(raw);
    return raw;
  }

  private failNext(id: string): void {
    const queued = this.opts.failures?.[id];
    if (queued && queued.length > 0) throw queued.shift();
  }
}

function untilAborted(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    else signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
}

function asWorkUnit(u: MemoryUnit): WorkUnit {
  return { id: u.id, params: u.params ?? {} };
}

/** Rows as CSV, nested values as JSON text (as the service writes them). */
function csvOf(rows: Row[]): string {
  const cols = [...new Set(rows.flatMap((r) => Object.keys(r)))];
  const cell = (v: unknown): string => {
    const s = v === undefined || v === null ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v);
    return /[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
  };
  return [cols.join(','), ...rows.map((r) => cols.map((c) => cell(r[c])).join(','))].join('\n') + '\n';
}

export interface MemorySinkOptions {
  nativeFormats?: RawFormat[];
  /** Units (by sink-side id) committed before the run. */
  committed?: string[];
  /** Makes `writeUnitFile` refuse a file: the reason, or undefined to load it. */
  refuse?: (file: RawFile) => string | undefined;
  /** Makes `writeUnitFile` fail with this error (not a refusal). */
  failNative?: Error;
  /** The sink's output lock file (`capabilities.files`), like a file sink's directory. */
  lockPath?: string;
  /** Runs when a unit's rows were read, before they are committed (a commit under way). */
  beforeCommit?: (id: string) => void | Promise<void>;
  /** A native load says its reading is over (`read()`) once it has parsed the file, before it commits. */
  readEarly?: boolean;
}

/** Commits units into a map; loads JSONL raw files "natively" by parsing their lines. */
export class MemorySink implements Sink {
  readonly capabilities: SinkCapabilities;
  readonly rows = new Map<string, Row[]>();
  /** Sink-side ids, in the order the engine asked for them, and by which path. */
  readonly writes: { id: string; path: 'rows' | 'native' }[] = [];
  readonly committed: Set<string>;
  /** Checkpoints committed with their units, by sink-side id (as `committedCheckpoints` returns them). */
  readonly checkpoints = new Map<string, unknown>();
  opened?: SinkContext;
  finished = false;
  closed = false;
  closeError?: Error;

  constructor(
    readonly name: string,
    private readonly opts: MemorySinkOptions = {},
  ) {
    const formats = opts.nativeFormats ?? [];
    this.capabilities = {
      ...(formats.length > 0 && {
        native: { formats, load: (u, f, c, _check, read) => this.loadFile(u, f, c, read) },
      }),
      ...(opts.lockPath !== undefined && {
        files: {
          lockFile: opts.lockPath,
          compact: () => Promise.resolve({ filesBefore: 0, filesAfter: 0, replaced: 0, written: 0 }),
        },
      }),
    };
    this.committed = new Set(opts.committed ?? []);
  }

  async committedCheckpoints(): Promise<Map<string, unknown>> {
    return new Map(this.checkpoints);
  }

  async drop(): Promise<string[]> {
    this.committed.clear();
    this.rows.clear();
    this.checkpoints.clear();
    return [`memory ${this.name}`];
  }

  async currentColumns(): Promise<ReadonlyMap<string, LogicalType> | undefined> {
    return undefined;
  }

  queryable(): Promise<QueryableOutput> {
    return Promise.reject(new Error('the memory sink cannot be queried'));
  }

  typeName(t: LogicalType): string {
    return describeType(t);
  }

  describe(): string {
    return `memory ${this.name}`;
  }

  outputQuery(limit: number): { sql: string; countIsCheap: boolean } {
    return { sql: `SELECT 1 LIMIT ${limit}`, countIsCheap: true };
  }

  async open(ctx: SinkContext): Promise<void> {
    this.opened = ctx;
  }

  async committedUnits(): Promise<Set<string>> {
    return new Set(this.committed);
  }

  async writeUnit(unit: WorkUnit, batches: AsyncIterable<Batch>, commit: UnitCommit): Promise<CommitResult> {
    this.writes.push({ id: unit.id, path: 'rows' });
    if (this.committed.has(unit.id)) return { committed: false, records: 0 };
    const rows: Row[] = [];
    for await (const b of batches) rows.push(...b);
    await this.opts.beforeCommit?.(unit.id);
    return this.commit(unit, rows, commit);
  }

  async finish(): Promise<void> {
    this.finished = true;
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.closeError) throw this.closeError;
  }

  private async loadFile(unit: WorkUnit, file: RawFile, commit: UnitCommit, read?: () => void): Promise<CommitResult> {
    this.writes.push({ id: unit.id, path: 'native' });
    if (this.opts.failNative) throw this.opts.failNative;
    const reason = this.opts.refuse?.(file);
    if (reason !== undefined) throw new NativeLoadRefused(`memory ${this.name}`, reason);
    if (this.committed.has(unit.id)) return { committed: false, records: 0 };
    const text = await readFile(file.path, 'utf8');
    const rows = text
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as Row);
    if (this.opts.readEarly) read?.();
    await this.opts.beforeCommit?.(unit.id);
    return this.commit(unit, rows, commit);
  }

  /** The unit's checkpoint is asked for at commit time, as a real sink stores it in the commit's transaction. */
  private commit(unit: WorkUnit, rows: Row[], commit: UnitCommit): CommitResult {
    const id = unit.id;
    const checkpoint = commit.checkpoint();
    this.committed.add(id);
    this.rows.set(id, rows);
    if (checkpoint !== undefined) this.checkpoints.set(id, structuredClone(checkpoint));
    return { committed: true, records: rows.length };
  }
}
