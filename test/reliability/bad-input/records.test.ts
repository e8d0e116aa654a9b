/**
 * Bad-input corpus (see harness.ts): bad records are not fatal; they become dead letters with the reason and offset,
 * and the good records are committed. A download cut short on every attempt is fatal and commits nothing.
 */
import { readFileSync } from 'node:fs';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { startEmulator, type EmulatorHandle } from '../../../src/emulator/server.js';
import { KEY, cli, duckdbRows, expectFailure, expectNothingCommitted, inventory, type Workspace } from './harness.js';
import { FILTER_SOURCE, HEAD, JSONL_SINK, emu, env, run, useCorpus } from './corpus.js';

useCorpus();

/** A JSONL body with `good` records and malformed lines at the given line numbers (1-based). */
function jsonlWithBadLines(good: number, bad: Record<number, string>): { text: string; offsets: number[] } {
  const lines: string[] = [];
  const offsets: number[] = [];
  let at = 0;
  let n = 0;
  for (let line = 1; n < good || bad[line] !== undefined; line++) {
    const text = bad[line] ?? JSON.stringify({ id: ++n, name: `record ${n}` });
    if (bad[line] !== undefined) offsets.push(at);
    lines.push(text);
    at += Buffer.byteLength(text) + 1;
  }
  return { text: lines.join('\n') + '\n', offsets };
}

interface Letter {
  unit: string;
  stage: string;
  offset?: number;
  reason: string;
  raw?: string;
}

function letters(ws: Workspace): Letter[] {
  const file = ws.path('.sluice/bad_input/dead-letters.jsonl');
  return readFileSyncSafe(file)
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Letter);
}

function readFileSyncSafe(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

describe('malformed records inside a valid stream: dead letters, the run goes on and exits 0', () => {
  it('JSONL lines that are not JSON objects (file source into DuckDB: the native load falls back to JS)', async () => {
    const { text, offsets } = jsonlWithBadLines(8, { 3: '{"id": 99, "name": ', 6: '[1, 2]', 9: 'not json at all' });
    const r = await run({
      'p.yaml':
        HEAD +
        'source: { type: file, paths: [in.jsonl], format: jsonl }\nsink: { type: duckdb, path: w.duckdb, table: t }\n',
      'in.jsonl': text,
    });
    expect(r.code, r.stderr.join('\n')).toBe(0);
    // The count, then the reasons with how often each occurred.
    expect(r.stdout).toContainEqual(
      expect.stringMatching(
        /^ {2}dead letters 3 \(line is not valid JSON: [^;]+ ×1; line is an array, not a JSON object ×1; line is not valid JSON: [^;]+ ×1\)$/,
      ),
    );
    const rows = await duckdbRows(r.ws.path('w.duckdb'));
    expect(rows[`${r.ws.path('w.duckdb')}:main.t`]).toBe(8);
    const got = letters(r.ws);
    expect(got.map((d) => [d.stage, d.offset])).toEqual(offsets.map((o) => ['decode', o]));
    expect(got[0]!.reason).toMatch(/^line is not valid JSON: /);
    expect(got[1]!.reason).toBe('line is an array, not a JSON object');
    expect(got[1]!.raw).toBe('[1, 2]');
    // `sluice dead-letters` lists unit, stage, offset and reason.
    const list = await cli(['dead-letters', r.ws.path('p.yaml')], env());
    expect(list.stdout[0]).toBe('3 dead letters not yet replayed (bad_input)');
    expect(list.stdout).toContainEqual(
      expect.stringMatching(
        new RegExp(`file:.*in\\.jsonl.* decode @${offsets[1]}: line is an array, not a JSON object$`),
      ),
    );
  });

  it('CSV rows that do not parse', async () => {
    const r = await run({
      'p.yaml': HEAD + 'source: { type: file, paths: [in.csv], format: csv }\n' + JSONL_SINK,
      'in.csv': 'id,name\n1,one\n2,"two" x\n3,three\n',
    });
    expect(r.code, r.stderr.join('\n')).toBe(0);
    const got = letters(r.ws);
    expect(got).toHaveLength(1);
    expect(got[0]).toMatchObject({ stage: 'decode', offset: 14 });
    expect(got[0]!.reason).toMatch(/^CSV row 2: text after the closing quote/);
    const inv = await inventory(r.ws, r.before);
    expect(Object.values(inv.manifestUnits)).toEqual([1]);
    const out = inv.newDataFiles.map((f) => readFileSync(r.ws.path(f), 'utf8')).join('');
    expect(
      out
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as { id: unknown }).id),
    ).toEqual(['1', '3']);
  });

  it('JSON array elements that are not objects', async () => {
    const r = await run({
      'p.yaml': HEAD + 'source: { type: file, paths: [in.json], format: json }\n' + JSONL_SINK,
      'in.json': '[{"id": 1}, 42, {"id": 2}, "x", {"id": 3}]',
    });
    expect(r.code, r.stderr.join('\n')).toBe(0);
    const got = letters(r.ws);
    expect(got.map((d) => [d.offset, d.reason])).toEqual([
      [12, 'array element is a number, not a JSON object'],
      [27, 'array element is a string, not a JSON object'],
    ]);
  });

  it('broken records inside a snapshot download', async () => {
    const proxy = await corruptingProxy(emu, { 2: '{"company_id": "x", ', 5: '"just a string"' });
    try {
      const r = await run(
        { 'p.yaml': HEAD + FILTER_SOURCE + 'sink: { type: duckdb, path: w.duckdb, table: companies }\n' },
        undefined,
        env(proxy),
      );
      expect(r.code, r.stderr.join('\n')).toBe(0);
      const got = letters(r.ws);
      expect(got.map((d) => d.stage)).toEqual(['decode', 'decode']);
      expect(got[0]!.unit).toMatch(/^snapshot:snap_\w+:jsonl:bs1000:part:1$/);
      expect(got[0]!.offset).toBe(proxy.offsets[0]);
      expect(got[1]!.offset).toBe(proxy.offsets[1]);
      const rows = await duckdbRows(r.ws.path('w.duckdb'));
      expect(rows[`${r.ws.path('w.duckdb')}:main.companies`]).toBe(proxy.records - 2);
    } finally {
      await proxy.close();
    }
  });
});

describe('a download cut short on every attempt', () => {
  it('truncated gzip: after the retries, one line naming the unit and the byte offset', async () => {
    const cut = await startEmulator({
      apiKey: KEY,
      seed: 5,
      size: 2000,
      timeScale: 50,
      faults: { rules: [{ route: 'GET /datasets/snapshots/*/download', rate: 1, faults: { truncated_gzip: 1 } }] },
    });
    try {
      const yaml =
        HEAD +
        FILTER_SOURCE.replace('batch_size: 1000 }', 'batch_size: 1000, compress: true }') +
        'sink: { type: duckdb, path: w.duckdb, table: companies }\n';
      const r = await run({ 'p.yaml': yaml }, undefined, env(cut));
      expectFailure(
        r,
        /^snapshot:snap_\w+:jsonl:bs1000:part:1: truncated gzip input: .* at byte \d+$/,
        /^the unit was read 4 times and its bytes were cut short or corrupt every time/,
      );
      expect(cut.stats.faults.truncated_gzip).toBe(4);
      await expectNothingCommitted(r.ws, r.before);
    } finally {
      await cut.close();
    }
  });
});

/**
 * A proxy in front of the emulator that replaces lines of every snapshot download (after gunzip) with the given
 * text, so a valid stream carries malformed records; `offsets` are their byte offsets in the decompressed part.
 */
async function corruptingProxy(
  target: EmulatorHandle,
  bad: Record<number, string>,
): Promise<{ url: string; offsets: number[]; records: number; close(): Promise<void> }> {
  const state = { offsets: [] as number[], records: 0 };
  const server: Server = createServer((req, res) => {
    const isDownload = req.method === 'GET' && /\/datasets\/snapshots\/[^/]+\/download/.test(req.url ?? '');
    if (!isDownload) {
      const up = httpRequest(
        { host: '127.0.0.1', port: target.port, method: req.method, path: req.url, headers: req.headers },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      req.pipe(up);
      return;
    }
    void (async () => {
      const answer = await fetch(`${target.url}${req.url}`, {
        headers: { authorization: req.headers.authorization ?? '' },
      });
      let body = Buffer.from(await answer.arrayBuffer());
      const gzipped = body[0] === 0x1f && body[1] === 0x8b;
      if (gzipped) body = gunzipSync(body);
      const lines = body.toString('utf8').split('\n');
      if (lines.at(-1) === '') lines.pop();
      state.offsets = [];
      let at = 0;
      const out = lines.map((l, i) => {
        const replaced = bad[i + 1] ?? l;
        if (bad[i + 1] !== undefined) state.offsets.push(at);
        at += Buffer.byteLength(replaced) + 1;
        return replaced;
      });
      state.records = lines.length;
      let sent = Buffer.from(out.join('\n') + '\n');
      if (gzipped) sent = gzipSync(sent);
      res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/jsonl' });
      res.end(sent);
    })().catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    get offsets() {
      return state.offsets;
    },
    get records() {
      return state.records;
    },
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
