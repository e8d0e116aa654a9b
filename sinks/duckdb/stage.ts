/**
 * A unit's rows made ready for DuckDB's `read_json`: a plain newline-delimited JSON file beside the database and
 * the schema of every row in it, so `read_json` gets explicit columns. With explicit columns DuckDB silently
 * drops keys it was not told about (top level and inside structs) and converts leniently (1 → true), so only a
 * schema learnt from every row proves that nothing is lost; letting DuckDB detect the columns from a sample is not
 * safe either (beyond the sample it rounds 1.5 into a BIGINT column, silently).
 *
 * - `stageRows` (rows from JS): the rows are written to a staging file, the schema inferred on the way — measured
 *   faster than the appender, row by row or in columnar DataChunks (`bench/sinks.ts`);
 * - `stageRawJsonl` (a unit's raw JSONL file, gzip or not), in one read: every line is parsed and must be one JSON
 *   object (raw-jsonl/line.ts); the rows' schema is observed, with ISO text typed as DuckDB's reader types it.
 *   Learning it natively instead (`json_group_structure` over `read_json_objects`) measured ~3× the CPU of this
 *   pass. A gzip file's decompressed bytes are written to a staging file as they go by, so the data is
 *   decompressed once (by zlib, on libuv's threads), not twice, and DuckDB's one thread only parses (see
 *   database.ts). The longest line is measured, so DuckDB's read buffers can be sized to the data.
 */
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, readdir, rm, rmdir } from 'node:fs/promises';
import path from 'node:path';
import { finished } from 'node:stream/promises';
import type { Batch, RecordCheck, Row } from '../../src/core/types.js';
import { InferredSchema } from '../../src/schema/infer.js';
import { decidedColumns, type LogicalType } from '../../src/core/logical-type.js';
import { ensureWritableDir } from '../../src/sink-kit/output-files/fs-durable.js';
import { writeNdjson } from '../../src/sink-kit/output-files/ndjson-writer.js';
import { unitFileStem } from '../../src/sink-kit/output-files/unit-file-name.js';
import { gunzipFile, isGzipFile } from '../../src/sink-kit/raw-jsonl/gzip.js';
import { checkedObjectLine } from '../../src/sink-kit/raw-jsonl/line.js';
import { JsonlLines } from '../../src/sink-kit/raw-jsonl/lines.js';

/** A unit's rows in a plain newline-delimited JSON file, with their schema. */
export interface StagedUnit {
  path: string;
  /** The columns whose type is decided (null-only ones are left out: their values are null anyway). */
  columns: ReadonlyMap<string, LogicalType>;
  /** The full schema, for its conflicts. */
  schema: InferredSchema;
  rows: number;
  /** Bytes of the longest line, when known: DuckDB's read buffers are sized to it. */
  longestLine?: number;
  /** Whether `path` is a staging file, removed by `discard`; a plain raw file is read in place. */
  staged: boolean;
}

/**
 * `<database>.sluice-tmp/`, where a sink's staging files live beside the database (DuckDB's own temp directory is
 * `<file>.tmp`). Files are prefixed per table, so sinks sharing the database clean up only their own.
 */
export class StagingDir {
  private readonly prefix: string;

  constructor(
    readonly dir: string,
    stateKey: string,
  ) {
    this.prefix = `${unitFileStem(stateKey)}.`;
  }

  /** Creates the directory and removes what a crash left behind: nothing else can be staging for this table. */
  async open(label: string): Promise<void> {
    await ensureWritableDir(this.dir, label);
    for (const name of await readdir(this.dir))
      if (name.startsWith(this.prefix)) await rm(path.join(this.dir, name), { force: true });
  }

  /** A new staging file's path for a unit; the directory exists again (another sink may have removed it). */
  async file(unitId: string): Promise<string> {
    await mkdir(this.dir, { recursive: true });
    return path.join(this.dir, `${this.prefix}${unitFileStem(unitId)}.${randomBytes(4).toString('hex')}.json`);
  }

  /** Leaves no empty directory beside the database; one still in use by another sink is not empty. */
  async close(): Promise<void> {
    await rmdir(this.dir).catch(() => undefined);
  }
}

/** Rows from JS → a staging file and their schema. */
export async function stageRows(batches: AsyncIterable<Batch>, file: string): Promise<StagedUnit> {
  const schema = new InferredSchema({ temporalText: true });
  try {
    const { rows, longestLine } = await writeNdjson(batches, file, { schema });
    return { path: file, columns: decidedColumns(schema.columns), schema, rows, longestLine, staged: true };
  } catch (err) {
    await rm(file, { force: true });
    throw err;
  }
}

/**
 * A unit's raw JSONL file (gzip or not) → its schema, and for gzip input a decompressed staging file at
 * `stagingPath` (removed again when the scan fails). Throws `BadJsonlLine` or zlib's error for a file that is not
 * JSONL as a whole, that holds a record `check` refuses, or a line over `maxLineBytes`.
 */
export async function stageRawJsonl(
  file: string,
  stagingPath: string,
  check?: RecordCheck,
  maxLineBytes = Infinity,
): Promise<StagedUnit> {
  const schema = new InferredSchema({ temporalText: true });
  const scan = await scanJsonl(file, schema, stagingPath, check, maxLineBytes);
  return {
    path: scan.path,
    columns: decidedColumns(schema.columns),
    schema,
    rows: scan.records,
    longestLine: scan.longestLine,
    staged: scan.staged,
  };
}

/** Removes the unit's staging file, if it has one. */
export async function discard(unit: StagedUnit): Promise<void> {
  if (unit.staged) await rm(unit.path, { force: true });
}

/**
 * Bytes per read, gunzip output and staging write. Each gunzip chunk is a round trip to libuv's threads: 256 KiB
 * measured ~12% less CPU for the pass than 64 KiB (4.3 vs 4.9 CPU-s over 200k records); 1 MiB was no better.
 */
const CHUNK = 1 << 18;

export interface ScannedJsonl {
  /** The file DuckDB should read: the staging file for gzip input, the input itself otherwise. */
  path: string;
  /** Whether `path` is the staging file (the caller removes it). */
  staged: boolean;
  records: number;
  /** Bytes of the longest line. */
  longestLine: number;
}

/**
 * Scans `file` into `schema` (create it with `temporalText`); gzip input is decompressed into `stagingPath`, which
 * is removed again when the scan fails.
 */
export async function scanJsonl(
  file: string,
  schema: InferredSchema,
  stagingPath: string,
  check?: RecordCheck,
  maxLineBytes = Infinity,
): Promise<ScannedJsonl> {
  const gzip = await isGzipFile(file);
  const lines = new LineScanner((row) => schema.observeRow(row), check, maxLineBytes);
  // Either stream is destroyed when the loop below stops early.
  const chunks = gzip ? gunzipFile(file, CHUNK) : createReadStream(file, { highWaterMark: CHUNK });
  const out = gzip ? createWriteStream(stagingPath, { highWaterMark: CHUNK }) : undefined;
  // Failures of the staging file surface through `once` and `finished` below; this keeps them from being unhandled.
  out?.on('error', () => undefined);
  try {
    for await (const chunk of chunks as AsyncIterable<Buffer>) {
      // Written before it is parsed: the write proceeds on libuv's threads while the chunk's lines are parsed.
      if (out && !out.write(chunk)) await once(out, 'drain');
      lines.push(chunk);
    }
    lines.end();
    if (out) await finished(out.end());
  } catch (err) {
    out?.destroy();
    if (out) await rm(stagingPath, { force: true });
    throw err;
  }
  return { path: gzip ? stagingPath : file, staged: gzip, records: lines.records, longestLine: lines.longest };
}

/**
 * Parses each line (raw-jsonl/lines.ts splits them, linear however long a line is, refusing one over the limit
 * before it is parsed); blank lines are skipped (DuckDB skips them too).
 */
class LineScanner {
  records = 0;
  longest = 0;
  private readonly lines: JsonlLines;

  constructor(onRow: (row: Row) => void, check: RecordCheck | undefined, maxLineBytes: number) {
    this.lines = new JsonlLines(maxLineBytes, (buf, start, end, offset) => {
      if (end - start > this.longest) this.longest = end - start;
      const row = checkedObjectLine(buf, start, end, offset, check);
      if (row === undefined) return;
      this.records++;
      onRow(row);
    });
  }

  push(chunk: Buffer): void {
    this.lines.push(chunk);
  }

  end(): void {
    this.lines.end();
  }
}
