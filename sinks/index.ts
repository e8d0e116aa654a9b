/** Every sink, listed explicitly: the pipeline registry and the generated docs read this list. */
import type { ComponentDef } from '../src/contracts/component.js';
import { clickhouseSink } from './clickhouse/sink.js';
import { duckdbSink } from './duckdb/sink.js';
import { jsonlSink } from './jsonl/sink.js';
import { parquetSink } from './parquet/sink.js';
import { postgresSink } from './postgres/sink.js';

export const sinkDefs: ComponentDef<'sink'>[] = [duckdbSink, parquetSink, jsonlSink, postgresSink, clickhouseSink];
