/**
 * Streams rows into `COPY … FROM STDIN` (text format, serialised by encode.ts) in chunks of ~256 KiB, so a unit is
 * encoded while it is read and never sits in memory. Up to `QUEUED_BYTES` of chunks may wait for the socket: the
 * server then always has the next rows at hand while this process decodes and encodes the ones after them, and
 * the writer waits only when the server falls that far behind (and resumes as soon as one chunk went out, not when
 * all did). Waiting for the socket to drain after every chunk made the two take turns instead of working at once.
 * A row Postgres cannot store (NUL in text) goes to the dead-letter file instead of failing the unit.
 *
 * A writer can keep a spool: the bytes it sent, in a file, so the rows already copied survive a rollback when a
 * later batch of the unit turns out not to fit the table (sink.ts); they are loaded again with `copySpool`. It
 * lives in the OS temporary directory ($TMPDIR), unlinked from the start: one unit's COPY text per unit in flight,
 * gone when the sink closes or the process dies (on a tmpfs /tmp, that is memory outside the process). Written with
 * the chunk already in hand, it costs a write call per chunk; holding the rows instead is what made memory grow
 * with the unit. Spools are kept for the next unit (`SpoolPool`) and overwritten, never truncated: freeing a
 * unit's blocks on every unit end (closing the file, or truncating it) cost more than writing them.
 */
import { closeSync, createReadStream, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { finished, pipeline } from 'node:stream/promises';
import type pg from 'pg';
import type * as CopyStreams from 'pg-copy-streams';
import type { CopyStreamQuery } from 'pg-copy-streams';
import { failpoint } from '../../src/core/failpoints.js';
import { lazyPackage } from '../../src/core/lazy-package.js';
import type { Batch, Row } from '../../src/core/types.js';
import { CopyBuffer, RowEncoder, UnstorableValue } from './encode.js';
import { quoteIdent } from '../../src/core/sql.js';

const copyStreams = lazyPackage<typeof CopyStreams>('pg-copy-streams');

/** COPY text per CopyData message: large enough that the protocol's and the socket's per-message costs vanish. */
const CHUNK_BYTES = 1 << 18;
/** Room in each new chunk's buffer for the row that crosses `CHUNK_BYTES` (a longer row grows it). */
const CHUNK_CAPACITY = CHUNK_BYTES + (1 << 16);
/** Chunks written but not yet taken by the socket, at most (besides what the kernel's socket buffer holds). */
const QUEUED_BYTES = 4 * CHUNK_BYTES;

function copyStatement(table: string, columns: readonly string[]): string {
  return `COPY ${table} (${columns.map(quoteIdent).join(', ')}) FROM STDIN (FORMAT text)`;
}

/**
 * A temporary file holding the COPY text a writer sent; `remove()` closes it. Its name is unlinked as soon as it is
 * open, so a process killed mid-unit leaves nothing behind: the file lives as long as the descriptor.
 */
export class Spool {
  private fd: number | undefined;
  private size = 0;
  /** The file's path while it still has one (where unlinking an open file fails). */
  private dir: string | undefined;

  constructor() {
    const dir = mkdtempSync(path.join(tmpdir(), 'sluice-pg-spool-'));
    this.fd = openSync(path.join(dir, 'unit.copy'), 'w+');
    try {
      rmSync(dir, { recursive: true, force: true });
    } catch {
      this.dir = dir;
    }
  }

  get bytes(): number {
    return this.size;
  }

  write(data: Buffer): void {
    // Synchronous: the data is in the page cache at once, and the chunk is already in memory either way.
    if (this.fd === undefined) return;
    writeSync(this.fd, data, 0, data.length, this.size);
    this.size += data.length;
  }

  /**
   * Empties the spool (a new attempt or a new unit starts over). The file keeps its blocks, which the next writes
   * overwrite: only the first `bytes` are ever read.
   */
  reset(): void {
    this.size = 0;
  }

  /** The bytes written, from the start; the spool stays open. */
  read(): Readable {
    if (this.fd === undefined || this.size === 0) return Readable.from([]);
    return createReadStream('', { fd: this.fd, start: 0, end: this.size - 1, autoClose: false });
  }

  remove(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
    if (this.dir !== undefined) rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Spools of finished units, handed to the next ones; `close()` removes them all. */
export class SpoolPool {
  private readonly free: Spool[] = [];

  take(): Spool {
    const spool = this.free.pop() ?? new Spool();
    spool.reset();
    return spool;
  }

  give(spool: Spool): void {
    spool.reset();
    this.free.push(spool);
  }

  close(): void {
    for (const spool of this.free.splice(0)) spool.remove();
  }
}

/** One `COPY … FROM STDIN` fed batch by batch; `end()` returns the rows the server stored. */
export class CopyWriter {
  private readonly stream: CopyStreamQuery;
  /** Encoded rows not sent yet. */
  private readonly out = new CopyBuffer(CHUNK_CAPACITY);
  private sent = 0;
  /** Bytes written to the stream whose write has not completed (the socket has not taken them yet). */
  private queued = 0;
  /** The COPY failed (the server refused it, the connection broke): every later write throws this. */
  private failed: Error | undefined;
  /** Resolves `room()`'s wait. */
  private wake: (() => void) | undefined;

  constructor(
    client: pg.PoolClient,
    table: string,
    columns: readonly string[],
    private readonly encoder: RowEncoder,
    private readonly onUnstorable: (row: Row, reason: string) => void,
    private readonly spool?: Spool,
  ) {
    this.stream = client.query(copyStreams().from(copyStatement(table, columns)));
    // Listening from the start: the server may refuse the COPY while this writer awaits the source, and an
    // 'error' nobody listens to would end the process.
    this.stream.on('error', (err) => {
      this.failed ??= err;
      this.wakeUp();
    });
  }

  async write(batch: Batch): Promise<void> {
    if (this.failed) throw this.failed;
    const encoder = this.encoder;
    for (const row of batch) {
      try {
        encoder.write(row, this.out);
      } catch (err) {
        if (!(err instanceof UnstorableValue)) throw err;
        this.onUnstorable(row, err.message);
        continue;
      }
      if (this.out.length >= CHUNK_BYTES) {
        this.flush();
        if (this.queued > QUEUED_BYTES) await this.room();
      }
    }
  }

  /** Hands the chunk to the stream, which sends it once the socket takes the chunks before it. */
  private flush(): void {
    const data = this.out.take();
    this.sent += data.length;
    this.spool?.write(data);
    this.queued += data.length;
    this.stream.write(data, () => {
      this.queued -= data.length;
      if (this.queued <= QUEUED_BYTES) this.wakeUp();
    });
    failpoint('postgres:mid-copy', this.sent);
  }

  /** Waits until the socket took enough for the queue to be within `QUEUED_BYTES`; throws when the COPY failed. */
  private async room(): Promise<void> {
    while (this.queued > QUEUED_BYTES && !this.failed) await new Promise<void>((resolve) => (this.wake = resolve));
    if (this.failed) throw this.failed;
  }

  private wakeUp(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }

  /** Keeps what was encoded but not sent yet in the spool too: the spool then holds every row written. */
  spoolPending(): void {
    if (this.out.length > 0) this.spool?.write(this.out.take());
  }

  async end(): Promise<number> {
    if (this.failed) throw this.failed;
    if (this.out.length > 0) this.flush();
    this.stream.end();
    await finished(this.stream);
    return this.stream.rowCount;
  }

  /** Sends CopyFail: the server ends the COPY, and the transaction is rolled back by the caller. */
  abort(err: unknown): void {
    // The server answers the CopyFail with an error of its own, which is this one's consequence, not news (the
    // listener set up in the constructor keeps it from ending the process).
    this.stream.destroy(err instanceof Error ? err : new Error(String(err)));
  }
}

/** Copies `batches` into `table`; returns the rows the server stored. */
export async function copyRows(
  client: pg.PoolClient,
  table: string,
  encoder: RowEncoder,
  columns: readonly string[],
  batches: Iterable<Batch>,
  onUnstorable: (row: Row, reason: string) => void,
): Promise<number> {
  const writer = new CopyWriter(client, table, columns, encoder, onUnstorable);
  try {
    for (const batch of batches) await writer.write(batch);
    return await writer.end();
  } catch (err) {
    writer.abort(err);
    throw err;
  }
}

/** Copies a spool's text into `table` (whose `columns` have the types the text was encoded for). */
export async function copySpool(
  client: pg.PoolClient,
  table: string,
  columns: readonly string[],
  spool: Spool,
): Promise<number> {
  if (spool.bytes === 0) return 0;
  const stream = client.query(copyStreams().from(copyStatement(table, columns)));
  await pipeline(spool.read(), stream);
  return stream.rowCount;
}
