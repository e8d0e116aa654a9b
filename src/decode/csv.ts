/** CSV — first draft via csv-parse, for measurement. */
import { parse } from 'csv-parse';
import type { Batch, Row } from '../core/types.js';
import { DecodeError } from '../core/errors.js';
import { Batcher, type DecodeContext, rejectRecord } from './context.js';

interface CsvApi {
  parse(buf: Buffer | undefined, end: boolean, push: (record: string[]) => void, close: () => void): Error | undefined;
  info: { bytes: number; lines: number };
}

export async function* decodeCsv(
  chunks: AsyncIterable<Buffer>,
  ctx: DecodeContext,
  jsonColumns: 'auto' | string[] | undefined,
): AsyncGenerator<Batch> {
  const out = new Batcher(ctx);
  const api = (parse({ bom: true, relax_column_count: true }) as unknown as { api: CsvApi }).api;
  let header: string[] | null = null;
  let last = 0;
  let decodeJson: boolean[] = [];
  const push = (rec: string[]): void => {
    if (header === null) {
      header = rec;
      decodeJson = header.map((h) => jsonColumns === 'auto' || (jsonColumns ?? []).includes(h));
      return;
    }
    if (rec.length !== header.length) {
      rejectRecord(ctx, api.info.bytes, `row has ${rec.length} fields, header has ${header.length}`, rec.join(','));
      return;
    }
    const row: Row = {};
    for (let k = 0; k < rec.length; k++) {
      const v = rec[k]!;
      const c = v.charCodeAt(0);
      row[header[k]!] = v === '' ? null : decodeJson[k] && (c === 0x5b || c === 0x7b) ? JSON.parse(v) : v;
    }
    out.add(row, api.info.bytes - last);
    last = api.info.bytes;
  };
  const close = (): void => {};
  for await (const chunk of chunks) {
    const err = api.parse(chunk, false, push, close);
    if (err) throw new DecodeError(ctx.unit, api.info.bytes, err.message);
    for (const b of out.take()) yield b;
  }
  const err = api.parse(undefined, true, push, close);
  if (err) throw new DecodeError(ctx.unit, api.info.bytes, err.message);
  for (const b of out.rest()) yield b;
}
