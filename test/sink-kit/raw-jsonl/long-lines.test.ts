/**
 * Long lines on every path a local JSONL file can take: the jsonl sink's copy (plain and gzip output), DuckDB's
 * native load, Parquet (decoded in JS) and the JS path of each (`fast_path: false`). The file holds a valid line over
 * `max_record_bytes` and ends in a 300 MB line without a newline (a sparse file: nothing of it is on disk). Every path
 * dead-letters both lines with the same reasons and commits the records around them; a path that held or parsed
 * the long line whole (the copy's check joined it chunk by chunk: 20 MB took 13 s, 300 MB no answer in 400 s) would
 * not finish within the test's time.
 */
import { mkdirSync, readFileSync, truncateSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../../src/runtime/logger.js';
import { runPipeline } from '../../../src/operations/run.js';
import { loadPipeline } from '../../../src/pipeline/load.js';
import { removeTempDirs, tempDir } from '../../sinks/helpers.js';

afterAll(removeTempDirs);

const MiB = 1 << 20;
const ENDLESS_BYTES = 300 * 1000 * 1000;

type Sink = 'jsonl' | 'jsonl.gz' | 'duckdb' | 'parquet';

interface Letter {
  offset: number;
  reason: string;
}

function sinkYaml(sink: Sink, name: string): string {
  if (sink === 'duckdb') return `{ type: duckdb, path: out/${name}.duckdb, table: t }`;
  if (sink === 'jsonl.gz') return `{ type: jsonl, path: out/${name}, compress: true }`;
  return `{ type: ${sink}, path: out/${name} }`;
}

async function ids(dir: string, sink: Sink, name: string): Promise<number[]> {
  const out = path.join(dir, 'out', name);
  const relation =
    sink === 'duckdb'
      ? 't'
      : sink === 'parquet'
        ? `read_parquet('${out}/**/*.parquet')`
        : `read_json_auto('${out}/**/*.jsonl*', format = 'newline_delimited')`;
  // The sink shares one instance per database file in this process: read through the same one.
  const instance = sink === 'duckdb' ? await DuckDBInstance.fromCache(`${out}.duckdb`) : await DuckDBInstance.create();
  const conn = await instance.connect();
  try {
    const rows = (await conn.runAndReadAll(`SELECT id FROM ${relation} ORDER BY id`)).getRowObjectsJS();
    return rows.map((r) => Number(r.id));
  } finally {
    conn.closeSync();
    if (sink !== 'duckdb') instance.closeSync();
  }
}

describe('a line over max_record_bytes, and one that never ends, on every path', () => {
  const long = `{"id":3,"pad":"${'x'.repeat(2 * MiB)}"}`;
  const endless = '{"id":6,"pad":"';
  const head = ['{"id":1}', '{"id":2}', long, '{"id":4}', '{"id":5}', endless].join('\n');
  let d = '';
  beforeAll(async () => {
    d = await tempDir();
    writeFileSync(path.join(d, 'ended.jsonl'), head.slice(0, -endless.length));
    writeFileSync(path.join(d, 'endless.jsonl'), head);
    truncateSync(path.join(d, 'endless.jsonl'), head.length + ENDLESS_BYTES);
  });

  const paths: [Sink, boolean][] = [
    ['jsonl', true],
    ['jsonl.gz', true],
    ['duckdb', true],
    ['parquet', true],
    ['jsonl', false],
    ['duckdb', false],
  ];
  it.each(paths.flatMap(([sink, fast]) => [true, false].map((endsInside) => ({ sink, fast, endsInside }))))(
    '$sink (fast path: $fast), the file ending inside a 300 MB line: $endsInside',
    async ({ sink, fast, endsInside }) => {
      const name = `${sink.replace('.', '_')}_${fast ? 'fast' : 'js'}_${endsInside ? 'endless' : 'ended'}`;
      const file = path.join(d, `${name}.yaml`);
      mkdirSync(path.join(d, 'out'), { recursive: true });
      writeFileSync(
        file,
        [
          'version: 1',
          `name: ${name}`,
          'service: { base_url: emulator, api_key: emulator-key }',
          `source: { type: file, paths: [${endsInside ? 'endless' : 'ended'}.jsonl], format: jsonl, incremental: false }`,
          `fast_path: ${fast}`,
          'limits: { max_record_bytes: 1MiB }',
          `sink: ${sinkYaml(sink, name)}`,
          '',
        ].join('\n'),
      );
      const summary = await runPipeline(
        await loadPipeline(file),
        { fresh: false, logFormat: 'text', quiet: true, progress: false },
        { log: silentLogger },
      );
      expect(summary.records).toBe(4);
      expect(summary.deadLetters).toBe(endsInside ? 2 : 1);
      // The native paths stop at the long line and hand the file to the JS decoder, which dead-letters it.
      expect(summary.nativeFallbacks).toBe(fast ? 1 : 0);
      expect(await ids(d, sink, name)).toEqual([1, 2, 4, 5]);

      const letters = readFileSync(path.join(d, '.sluice', name, 'dead-letters.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Letter);
      // The same letters on every path: the JS decoder's reasons, the lines' offsets.
      expect(letters.map(({ offset, reason }) => ({ offset, reason }))).toEqual([
        {
          offset: 18,
          reason:
            'line (2.0 MiB) is over the record size limit of 1 MiB (limits.max_record_bytes); skipped unread, its first bytes kept',
        },
        ...(endsInside
          ? [
              {
                offset: head.length - endless.length,
                reason:
                  'line (286.1 MiB or more: the input ends inside it) is over the record size limit of 1 MiB (limits.max_record_bytes); skipped unread, its first bytes kept',
              },
            ]
          : []),
      ]);
    },
  );
});
