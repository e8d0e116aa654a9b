/**
 * The emulator's IP block, as the service's (docs/service.md §6): 25 answers of 429 to one IP within five emulated
 * minutes, and every API call from it is refused with 403 until support (`DELETE /_emulator/ip-block`) clears it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, type EmulatorHandle } from '../../src/emulator/server.js';
import type { IpBlockView } from '../../src/emulator/ip-block.js';
import { rawRequest } from './raw-http.js';

const AUTH = { authorization: 'Bearer emulator-key' };
const open: EmulatorHandle[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((e) => e.close()));
});

/** Every `GET /countrieslist` answers 429; other routes answer normally. */
async function emulator(extra: { ipBlockAfter?: number } = {}): Promise<EmulatorHandle> {
  const e = await startEmulator({
    now: Date.parse('2025-03-01T02:00:00Z'),
    faults: { rules: [{ route: 'GET /countrieslist', rate: 1, faults: { '429': 1 } }] },
    ...extra,
  });
  open.push(e);
  return e;
}

/** One call's status (through fetch's kept-alive connections: these tests make a hundred calls). */
async function status(e: EmulatorHandle, path: string): Promise<number> {
  const res = await fetch(`${e.url}${path}`, { headers: AUTH });
  await res.arrayBuffer();
  return res.status;
}

async function refusals(e: EmulatorHandle, n: number): Promise<void> {
  for (let i = 0; i < n; i++) expect(await status(e, '/countrieslist')).toBe(429);
}

const view = async (e: EmulatorHandle): Promise<IpBlockView> =>
  JSON.parse((await rawRequest(`${e.url}/_emulator/ip-block`)).body.toString()) as IpBlockView;

describe('IP block', () => {
  it('the 25th 429 within five minutes blocks the IP on every call until support clears it', async () => {
    const e = await emulator();
    await refusals(e, 24);
    expect(await status(e, '/datasets/list')).toBe(200);
    await refusals(e, 1);
    const blocked = await rawRequest(`${e.url}/datasets/list`, { headers: AUTH });
    expect(blocked.status).toBe(403);
    expect(blocked.body.toString()).toBe('Access denied.');
    // Every call, even one without a key: the block is the IP's.
    expect(await status(e, '/status')).toBe(403);
    expect((await rawRequest(`${e.url}/zone/get_active_zones`)).status).toBe(403);
    const [ip, counts] = Object.entries((await view(e)).ips)[0]!;
    expect(ip).toMatch(/127\.0\.0\.1/);
    expect(counts).toEqual({ in_window: 25, max_in_window: 25, total_429: 25, blocked: true });
    // Time does not lift it; support does.
    await rawRequest(`${e.url}/_emulator/clock`, { method: 'POST', body: JSON.stringify({ advance: '1d' }) });
    expect(await status(e, '/datasets/list')).toBe(403);
    await rawRequest(`${e.url}/_emulator/ip-block`, { method: 'DELETE' });
    expect(await status(e, '/datasets/list')).toBe(200);
  });

  it('the window is five minutes of the emulated clock', async () => {
    const e = await emulator();
    await refusals(e, 20);
    await rawRequest(`${e.url}/_emulator/clock`, { method: 'POST', body: JSON.stringify({ advance: '301s' }) });
    await refusals(e, 20);
    expect(await status(e, '/datasets/list')).toBe(200);
    expect(Object.values((await view(e)).ips)[0]).toMatchObject({ in_window: 20, max_in_window: 20, total_429: 40 });
  });

  it('ipBlockAfter: 0 counts the 429s but never blocks', async () => {
    const e = await emulator({ ipBlockAfter: 0 });
    await refusals(e, 26);
    expect(await status(e, '/datasets/list')).toBe(200);
    expect(Object.values((await view(e)).ips)[0]).toMatchObject({ max_in_window: 26, blocked: false });
  });
});
