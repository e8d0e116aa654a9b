/** Every sink, listed explicitly: the pipeline registry and the generated docs read this list. */
import type { ComponentDef } from '../src/core/types.js';
import { duckdbSink } from './duckdb.js';
import { jsonlSink } from './jsonl.js';
import { parquetSink } from './parquet.js';

export const sinkDefs: ComponentDef<'sink'>[] = [duckdbSink, parquetSink, jsonlSink];
