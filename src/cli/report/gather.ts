/**
 * What the report shows besides the history: the cursor the sinks committed and the size of each output. Both are
 * read as `sluice state` and `--show` read them (under the pipeline's locks; through DuckDB) and both are extras: a
 * run holding the lock, a database that cannot be reached, becomes a note on the page, never a failed report.
 */
import { existsSync } from 'node:fs';
import type { Logger } from '../../core/types.js';
import { sinkConfigs } from '../../engine/components.js';
import { committedList, isIncremental } from '../../engine/cursor.js';
import { pipelinePaths } from '../../engine/paths.js';
import { readSinkCheckpoints } from '../../engine/read-checkpoints.js';
import type { LoadedPipeline } from '../../pipeline/load.js';
import { componentsWithoutService } from '../offline.js';
import { sinkForShow } from '../show.js';
import type { CursorInfo, OutputInfo } from './page.js';

const quiet: Logger = { debug() {}, info() {}, warn() {}, error() {} };

const firstLine = (err: unknown): string => (err instanceof Error ? err.message : String(err)).split('\n')[0]!;

export async function readCursor(pipeline: LoadedPipeline): Promise<CursorInfo> {
  const built = await componentsWithoutService(pipeline, quiet, 'sluice report');
  const base = { source: built.sourceType, incremental: isIncremental(built.source) };
  if (!base.incremental) return base;
  try {
    const perSink = await readSinkCheckpoints(
      built.sinks.map((s) => s.sink),
      {
        lockFile: pipelinePaths(pipeline).lockFile,
        baseDir: pipeline.baseDir,
        pipeline: pipeline.name,
        command: `sluice report ${pipeline.file}`,
        log: quiet,
      },
    );
    const effective = committedList(perSink);
    const newest = effective[effective.length - 1];
    return { ...base, units: effective.length, ...(newest && { newest }) };
  } catch (err) {
    return { ...base, note: `cursor not read: ${firstLine(err)}` };
  }
}

/**
 * Sinks whose row count costs next to nothing: a DuckDB table's count is in its metadata, Parquet's in each file's
 * footer. JSONL would be read whole, and Postgres is not read through DuckDB (its `--show` names a psql query).
 */
const CHEAP_COUNT = new Set(['duckdb', 'parquet']);

export async function readOutputs(pipeline: LoadedPipeline): Promise<OutputInfo[]> {
  const out: OutputInfo[] = [];
  for (const config of sinkConfigs(pipeline.config)) {
    const sink = sinkForShow(config, pipeline.baseDir);
    const name = sink.describe();
    if (!CHEAP_COUNT.has(config.type)) {
      out.push({ sink: name, note: 'not counted here (it would read the whole output)' });
      continue;
    }
    try {
      const { database, sql } = sink.outputQuery(Number.MAX_SAFE_INTEGER);
      // Opening a DuckDB file that does not exist would create it.
      if (database !== undefined && !existsSync(database)) {
        out.push({ sink: name, rows: 0, note: 'nothing written yet' });
        continue;
      }
      const { DuckDBInstance } = await import('@duckdb/node-api');
      const instance = database ? await DuckDBInstance.fromCache(database) : await DuckDBInstance.create(':memory:');
      const connection = await instance.connect();
      try {
        const rows = (await connection.runAndReadAll(`SELECT count(*) AS n FROM (${sql})`)).getRowObjectsJS();
        out.push({ sink: name, rows: Number(rows[0]?.n ?? 0) });
      } finally {
        connection.closeSync();
      }
    } catch (err) {
      const text = firstLine(err);
      out.push(
        /No files found/i.test(text)
          ? { sink: name, rows: 0, note: 'nothing written yet' }
          : { sink: name, note: text },
      );
    }
  }
  return out;
}
