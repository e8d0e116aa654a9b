/**
 * Streams rows into `COPY … FROM STDIN` (text format, serialised by encode.ts) in chunks of ~256 KiB, waiting for
 * 'drain' whenever the socket's buffer is full, so a unit never sits in memory twice: once as rows, and at most one
 * chunk as text. A row Postgres cannot store (NUL in text) goes to the dead-letter file instead of failing the unit.
 */
import { once } from 'node:events';
import { finished } from 'node:stream/promises';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { failpoint } from '../../src/core/failpoints.js';
import type { Batch, Row } from '../../src/core/types.js';
import { RowEncoder, UnstorableValue } from './encode.js';
import { quoteIdent } from './types.js';

const CHUNK_CHARS = 1 << 18;

/** Copies `batches` into `table`; returns the rows the server stored. */
export async function copyRows(
  client: pg.PoolClient,
  table: string,
  encoder: RowEncoder,
  columns: readonly string[],
  batches: Iterable<Batch>,
  onUnstorable: (row: Row, reason: string) => void,
): Promise<number> {
  const stream = client.query(
    copyFrom(`COPY ${table} (${columns.map(quoteIdent).join(', ')}) FROM STDIN (FORMAT text)`),
  );
  let sent = 0;
  let chunk = '';
  try {
    for (const batch of batches) {
      for (const row of batch) {
        try {
          chunk += encoder.line(row);
        } catch (err) {
          if (!(err instanceof UnstorableValue)) throw err;
          onUnstorable(row, err.message);
          continue;
        }
        if (chunk.length >= CHUNK_CHARS) {
          sent += chunk.length;
          const more = stream.write(chunk);
          chunk = '';
          failpoint('postgres:mid-copy', sent);
          if (!more) await once(stream, 'drain');
        }
      }
    }
    if (chunk.length > 0) stream.write(chunk);
    stream.end();
    await finished(stream);
  } catch (err) {
    // Sends CopyFail: the server ends the COPY, and the transaction is rolled back by the caller.
    stream.destroy(err as Error);
    throw err;
  }
  return stream.rowCount;
}
