/**
 * The duckdb sink's tests' harness: a temporary directory and database file per test, sinks closed after each.
 */
import path from 'node:path';
import { afterAll, afterEach, beforeEach } from 'vitest';
import type { SinkContext } from '../../../src/core/types.js';
import { duckdbSinkSchema, type DuckDBSinkConfig } from '../../../sinks/duckdb/config.js';
import { DuckDBSink } from '../../../sinks/duckdb/sink.js';
import { removeTempDirs, sinkContext, tempDir } from '../helpers.js';

/** Registers the file's hooks; `file` is the database's path in the test's directory. */
export function duckdbSinkHarness(file: string) {
  let dir = '';
  let db = '';
  /** Sinks closed after the test (a test that closes one itself takes it out). */
  const opened: DuckDBSink[] = [];
  const closeAll = async (): Promise<void> => {
    for (const s of opened.splice(0)) await s.close();
  };
  afterAll(removeTempDirs);
  beforeEach(async () => {
    dir = await tempDir();
    db = path.join(dir, file);
  });
  afterEach(closeAll);

  const config = (over: Partial<DuckDBSinkConfig> = {}): DuckDBSinkConfig =>
    duckdbSinkSchema.parse({ type: 'duckdb', path: file, table: 't', ...over });

  return {
    opened,
    closeAll,
    config,
    get dir(): string {
      return dir;
    },
    get db(): string {
      return db;
    },
    async openSink(over: Partial<DuckDBSinkConfig> = {}, ctx: SinkContext = sinkContext(dir)): Promise<DuckDBSink> {
      const sink = new DuckDBSink(config(over));
      await sink.open(ctx);
      opened.push(sink);
      return sink;
    },
  };
}
