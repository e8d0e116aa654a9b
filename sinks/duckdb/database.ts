/**
 * One DuckDB database per file for the whole process. DuckDB allows a single writer per file, and several sinks
 * (different tables, or pipelines run one after another in one process) may name the same file: they share the
 * instance and serialise their writes per table here. The registry is module state on purpose — it mirrors
 * DuckDB's own process-wide instance cache, which it uses.
 */
import path from 'node:path';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { LockedError, SluiceError } from '../../src/core/errors.js';
import { Mutex, RwLock } from '../../src/core/concurrency.js';
import { makeDir } from '../../src/core/make-dir.js';

interface Entry {
  instance: DuckDBInstance;
  refs: number;
  tableLocks: Map<string, RwLock>;
  /** Tables an open sink writes to: two sinks on one table would break each other's commits. */
  claimed: Set<string>;
  /** Units loading into this database at once (see `withLoadSlot`). */
  loads: Mutex;
}

const databases = new Map<string, Promise<Entry>>();

/** WAL bytes at which DuckDB checkpoints on its own (see `openEntry`). */
export const CHECKPOINT_THRESHOLD = '256MB';

export class DuckDBDatabase {
  private released = false;

  private constructor(
    readonly file: string,
    private readonly entry: Entry,
  ) {}

  static async acquire(file: string, label: string): Promise<DuckDBDatabase> {
    let pending = databases.get(file);
    if (!pending) {
      pending = openEntry(file, label);
      databases.set(file, pending);
      pending.catch(() => databases.delete(file));
    }
    const entry = await pending;
    entry.refs++;
    return new DuckDBDatabase(file, entry);
  }

  /** A new connection with the settings every sink statement assumes. */
  async connect(): Promise<DuckDBConnection> {
    const conn = await this.entry.instance.connect();
    // Timestamps are UTC instants; TIMESTAMPTZ → TIMESTAMP conversions must not shift them by the host's zone.
    await conn.run(`SET TimeZone = 'UTC'`);
    return conn;
  }

  /**
   * Runs a load (a transaction, insert to commit: one unit's, or a group's, group.ts) when no other is loading into
   * this file, from any sink. A load's uncommitted rows stay pinned in DuckDB's memory until it commits, so
   * concurrent loads multiply the memory a load needs (two 10k-record units ran out of a 128 MB limit), and with
   * DuckDB on one thread they gained nothing: the JS pass over the next units runs meanwhile. A group pays where a
   * pair of units did not: DuckDB skips the WAL only for a transaction that fills a row group (122,880 rows), and
   * groups of 2–7 units of 10k rows cost 7.3–8.0 CPU-s over 200k records against 6.5–7.0 one unit at a time, 13 or
   * more 5.7–6.4; so a group gathers the units on their way while it inserts (the engine reads ahead for it).
   */
  withLoadSlot<T>(fn: () => Promise<T>): Promise<T> {
    return this.entry.loads.run(fn);
  }

  /** Runs `fn` while nothing else runs on `table` (a qualified name): schema changes, deletes, swaps. */
  withTable<T>(table: string, fn: () => Promise<T>): Promise<T> {
    return this.lock(table).exclusive(fn);
  }

  /** Runs `fn` alongside other shared sections on `table`: appends, which DuckDB lets transactions make at once. */
  withTableShared<T>(table: string, fn: () => Promise<T>): Promise<T> {
    return this.lock(table).shared(fn);
  }

  private lock(table: string): RwLock {
    let l = this.entry.tableLocks.get(table);
    if (!l) this.entry.tableLocks.set(table, (l = new RwLock()));
    return l;
  }

  claim(table: string): void {
    if (this.entry.claimed.has(table))
      throw new SluiceError(`two sinks write to table ${table} of ${this.file}`, {
        hint: 'give each sink its own table (or its own file)',
      });
    this.entry.claimed.add(table);
  }

  unclaim(table: string): void {
    this.entry.claimed.delete(table);
  }

  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    if (--this.entry.refs > 0) return;
    databases.delete(this.file);
    // The instance stays in DuckDB's cache for other holders in this process (tests, a reader): only flush the
    // WAL into the file so the database is complete on disk.
    const conn = await this.entry.instance.connect();
    try {
      await conn.run('CHECKPOINT');
    } catch {
      // Another connection's open transaction blocks a checkpoint; the WAL is replayed on the next open.
    } finally {
      conn.closeSync();
    }
  }
}

async function openEntry(file: string, label: string): Promise<Entry> {
  try {
    await makeDir(path.dirname(file));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new SluiceError(`${label}: cannot create the directory of ${file} (${code})`, {
      hint:
        code === 'EEXIST' || code === 'ENOTDIR'
          ? 'a file is in the way of that directory: move the file, or point `path` somewhere else'
          : 'give the user running sluice write access there, or point `path` somewhere writable',
      cause: err,
    });
  }
  let instance: DuckDBInstance;
  try {
    instance = await DuckDBInstance.fromCache(file);
    const probe = await instance.connect();
    // Hand freed memory back to the OS after each task instead of keeping up to 128 MB per thread cached:
    // measured 50–90 MB lower peak RSS per unit load at no measurable cost in speed. (A threshold of 0 saved
    // another ~80 MB on 200k records but cost ~25% more CPU.)
    await probe.run(`SET allocator_flush_threshold = '32MB'`);
    await probe.run('SET allocator_background_threads = true');
    // One DuckDB thread: sluice's own pass over each unit (parse, schema, staging) keeps the other core busy, and
    // a second DuckDB thread only added contention — 200k records in 10.7–13 CPU-s with one thread, 14–19 with
    // two, at the same wall time (`npm run bench`; threads per load and loads at once measured). Two threads only
    // pay off with `preserve_insertion_order = false` (DuckDB alone: 5.6 s instead of 6.9 s over 200k records),
    // which needs a 256 MB limit (128 MB ran out of memory; peak 524 MB) and gives up the file's row order.
    await probe.run('SET threads = 1');
    // Units commit 10k rows at a time, and every automatic checkpoint (default: each 16 MB of WAL) rewrites the
    // table's last, growing row group (122,880 rows). At 256 MB of WAL (~11 units of company profiles) that
    // happens about once per row group, and the checkpoint when the last sink releases the file is shorter; 48 or
    // 96 MB cost 15–20% more CPU, 1 GB no less than 256 MB.
    await probe.run(`SET checkpoint_threshold = '${CHECKPOINT_THRESHOLD}'`);
    probe.closeSync();
  } catch (err) {
    throw openFailure(label, file, err);
  }
  return { instance, refs: 0, tableLocks: new Map(), claimed: new Set(), loads: new Mutex() };
}

/** Why DuckDB would not open a file, told apart from its message (@duckdb/node-api gives no type or code). */
export type OpenFailureKind =
  { kind: 'locked'; pid?: number; process?: string } | { kind: 'permission' } | { kind: 'other' };

/**
 * DuckDB says `Could not set lock on file "…": Conflicting lock is held in /usr/bin/node (PID 123)` when another
 * process has the file open. Permission is checked first: a file this user cannot write can fail while taking the
 * lock too, and "another process has it open" would then send the user looking for a process that does not exist.
 */
export function classifyOpenFailure(message: string): OpenFailureKind {
  if (/permission denied|EACCES|read-only file system/i.test(message)) return { kind: 'permission' };
  if (!/conflicting lock|could not set lock/i.test(message)) return { kind: 'other' };
  const held = /held in (.+?) \(PID (\d+)\)/i.exec(message);
  return held ? { kind: 'locked', pid: Number(held[2]), process: held[1]! } : { kind: 'locked' };
}

/** The filesystem's own refusal, named as the OS names it: a read-only filesystem is not a missing permission. */
function filesystemRefusal(message: string): string {
  return /read-only file system|EROFS/i.test(message) ? 'read-only file system (EROFS)' : 'permission denied (EACCES)';
}

function openFailure(label: string, file: string, err: unknown): SluiceError {
  const msg = err instanceof Error ? err.message : String(err);
  const failure = classifyOpenFailure(msg);
  if (failure.kind === 'locked') {
    const who = failure.pid !== undefined ? ` (pid ${failure.pid}, ${failure.process})` : '';
    return new LockedError(`${label}: ${file} is locked by another process${who}`, {
      file,
      hint: 'another process has the database open (a running sluice, the duckdb CLI, a notebook): close it, or wait for it to finish',
      cause: err,
    });
  }
  return new SluiceError(
    `${label}: cannot open ${file}: ${failure.kind === 'permission' ? filesystemRefusal(msg) : msg.split('\n')[0]}`,
    {
      hint:
        failure.kind === 'permission'
          ? /EROFS/.test(filesystemRefusal(msg))
            ? `the filesystem of ${file} is mounted read-only: mount it read-write, or point \`path\` somewhere writable`
            : `give the user running sluice read and write access to ${file} and its directory, or point \`path\` at a new file`
          : `check that ${file} is a DuckDB database this user can write, or point \`path\` at a new file`,
      cause: err,
    },
  );
}
