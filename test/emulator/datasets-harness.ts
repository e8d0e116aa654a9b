/** HTTP helpers shared by the datasets emulator tests: plain fetch against a started emulator. */
import { gunzipSync } from 'node:zlib';
import { expect } from 'vitest';
import type { EmulatorHandle } from '../../src/emulator/server.js';

export const AUTH = { authorization: 'Bearer emulator-key' };
export const COMPANIES = 'gd_l1vikfnt1wgvvqz95w';

export type Obj = Record<string, any>;

export interface Answer {
  status: number;
  headers: Headers;
  bytes: Buffer;
  text: string;
  /** Parsed JSON when the body is JSON, else undefined. */
  body: any;
}

export async function call(
  emu: EmulatorHandle,
  method: string,
  path: string,
  opts: { json?: unknown; form?: FormData } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { ...AUTH };
  if (opts.json !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${emu.url}${path}`, {
    method,
    headers,
    ...(opts.json !== undefined && { body: JSON.stringify(opts.json) }),
    ...(opts.form !== undefined && { body: opts.form }),
  });
  const bytes = Buffer.from(await res.arrayBuffer());
  const text = bytes.toString('utf8');
  let body: any;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: res.status, headers: res.headers, bytes, text, body };
}

/** Starts a filter job (JSON mode) and returns its snapshot id. */
export async function startJob(emu: EmulatorHandle, request: Obj): Promise<string> {
  const res = await call(emu, 'POST', '/datasets/filter', { json: request });
  expect(res.status, res.text).toBe(200);
  expect(res.body.snapshot_id).toMatch(/^snap_[a-z0-9]+$/);
  return res.body.snapshot_id as string;
}

/** Multipart filter request: `filter` as JSON text, files as `files[]` parts. */
export function filterForm(filter: unknown, files: { name: string; content: string; type?: string }[]): FormData {
  const form = new FormData();
  form.set('filter', JSON.stringify(filter));
  for (const f of files) form.append('files[]', new Blob([f.content], { type: f.type ?? 'text/csv' }), f.name);
  return form;
}

/** Polls the snapshot until it is ready, failed or canceled; returns every status seen, in order, and the final metadata. */
export async function waitFinal(emu: EmulatorHandle, id: string, everyMs = 5): Promise<{ meta: Obj; seen: string[] }> {
  const seen: string[] = [];
  for (let i = 0; i < 4000; i++) {
    const res = await call(emu, 'GET', `/datasets/snapshots/${id}`);
    expect(res.status).toBe(200);
    const meta = res.body as Obj;
    if (seen[seen.length - 1] !== meta.status) seen.push(meta.status);
    if (meta.status === 'ready' || meta.status === 'failed' || meta.status === 'canceled') return { meta, seen };
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`snapshot ${id} never finished`);
}

/** The records of a download body in any format the tests use (gzip sniffed by magic bytes). */
export function parseJsonRecords(bytes: Buffer): Obj[] {
  const raw = bytes[0] === 0x1f && bytes[1] === 0x8b ? gunzipSync(bytes) : bytes;
  const text = raw.toString('utf8');
  if (text.trimStart().startsWith('[')) return JSON.parse(text) as Obj[];
  return text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Obj);
}

/**
 * Filters to completion and downloads the whole snapshot as JSONL; [] when nothing matches (the 422 up front, or a
 * no-match snapshot under the `noMatch: failed_snapshot` switch).
 */
export async function filterRecords(emu: EmulatorHandle, request: Obj, form?: FormData): Promise<Obj[]> {
  let res: Answer;
  if (form) {
    const q = new URLSearchParams({ dataset_id: request.dataset_id as string });
    if (request.records_limit !== undefined) q.set('records_limit', String(request.records_limit));
    res = await call(emu, 'POST', `/datasets/filter?${q}`, { form });
  } else res = await call(emu, 'POST', '/datasets/filter', { json: request });
  if (res.status === 422) {
    expect(res.body).toEqual({ error: 'Provided filter did not match any records' });
    return [];
  }
  expect(res.status, res.text).toBe(200);
  const id = res.body.snapshot_id as string;
  const { meta } = await waitFinal(emu, id);
  if (meta.status === 'failed') {
    expect(meta.warning_code, JSON.stringify(meta)).toBe('no_records_found');
    return [];
  }
  const dl = await call(emu, 'GET', `/datasets/snapshots/${id}/download`);
  expect(dl.status).toBe(200);
  return parseJsonRecords(dl.bytes);
}
