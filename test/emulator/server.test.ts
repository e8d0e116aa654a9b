import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, type EmulatorHandle } from '../../src/emulator/server.js';
import { rawRequest, type RawResponse } from './raw-http.js';

const AUTH = { authorization: 'Bearer emulator-key', 'content-type': 'application/json' };
const LATENCY_MS = 150;

const open: EmulatorHandle[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((e) => e.close()));
});

async function emulator(faults?: unknown): Promise<EmulatorHandle> {
  const e = await startEmulator({ seed: 5, latencyMs: LATENCY_MS, ...(faults !== undefined && { faults }) });
  open.push(e);
  return e;
}

/** The answer to `POST /request` for `zone`, and the milliseconds between sending it and its end. */
async function timedSearch(e: EmulatorHandle, zone = 'serp_zone'): Promise<{ res: RawResponse; ms: number }> {
  const body = JSON.stringify({ zone, url: 'https://www.google.com/search?q=latency&brd_json=1', format: 'raw' });
  const started = performance.now();
  const res = await rawRequest(`${e.url}/request`, { method: 'POST', headers: AUTH, body });
  return { res, ms: performance.now() - started };
}

// Timers count whole milliseconds, so one may end up to a millisecond before the exact latency.
const AT_LEAST = LATENCY_MS - 1;

describe('emulator latency (counted from the request’s arrival)', () => {
  it('holds a page, and an error the handler raised, until the latency has passed', async () => {
    const e = await emulator();
    const [page, unknownZone] = await Promise.all([timedSearch(e), timedSearch(e, 'no_such_zone')]);
    expect(page.res.status).toBe(200);
    expect(JSON.parse(page.res.body.toString())).toHaveProperty('organic');
    expect(page.ms).toBeGreaterThanOrEqual(AT_LEAST);
    expect(unknownZone.res.status).toBe(400);
    expect(unknownZone.res.body.toString()).toContain('not found');
    expect(unknownZone.ms).toBeGreaterThanOrEqual(AT_LEAST);
  });

  it('holds injected faults too: a 429 instead of the work, and a connection dropped after it', async () => {
    const refused = await emulator({ rules: [{ route: 'POST /request', rate: 1, faults: { '429': 1 } }] });
    const r = await timedSearch(refused);
    expect(r.res.status).toBe(429);
    expect(r.ms).toBeGreaterThanOrEqual(AT_LEAST);

    const dropped = await emulator({ rules: [{ route: 'POST /request', rate: 1, faults: { reset_after: 1 } }] });
    const d = await timedSearch(dropped);
    expect(d.res.status).toBeUndefined();
    expect(d.res.error).toBeDefined();
    expect(d.ms).toBeGreaterThanOrEqual(AT_LEAST);
    expect(dropped.stats.faults.reset_after).toBe(1);
  });

  it('counts the request in flight while its answer is held', async () => {
    const e = await emulator();
    const pending = timedSearch(e);
    while (e.stats.inFlight === 0) await new Promise((r) => setTimeout(r, 2));
    expect(e.stats.routeInFlight['POST /request']).toBe(1);
    const { res } = await pending;
    expect(res.status).toBe(200);
    expect(e.stats.inFlight).toBe(0);
  });
});
