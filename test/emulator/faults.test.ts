import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, SluiceError } from '../../src/core/errors.js';
import { loadFaultsFile, startEmulator, type EmulatorHandle } from '../../src/emulator/server.js';
import { rawRequest, type RawResponse } from './raw-http.js';

const AUTH = { authorization: 'Bearer emulator-key', 'content-type': 'application/json' };
const SEARCH = { zone: 'serp_zone', url: 'https://www.google.com/search?q=faults&brd_json=1', format: 'raw' };

const open: EmulatorHandle[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((e) => e.close()));
});

async function emulatorWith(faults: unknown, seed = 3): Promise<EmulatorHandle> {
  const e = await startEmulator({ seed, faults });
  open.push(e);
  return e;
}

function oneKind(kind: string, extra: Record<string, unknown> = {}, route = 'POST /request'): unknown {
  return { rules: [{ route, rate: 1, faults: { [kind]: 1 }, ...extra }] };
}

function search(e: EmulatorHandle, onFirstChunk?: () => void): Promise<RawResponse> {
  return rawRequest(`${e.url}/request`, { method: 'POST', headers: AUTH, body: JSON.stringify(SEARCH), onFirstChunk });
}

describe('fault kinds, as a raw client sees them', () => {
  it('429 without Retry-After, with a JSON {error} body', async () => {
    const e = await emulatorWith(oneKind('429'));
    const res = await search(e);
    expect(res.status).toBe(429);
    expect(res.headers['retry-after']).toBeUndefined();
    expect(JSON.parse(res.body.toString())).toEqual({ error: expect.any(String) });
    expect(e.stats.faults['429']).toBe(1);
  });

  it('429 with Retry-After in seconds', async () => {
    const e = await emulatorWith(oneKind('429_retry_after', { retry_after_s: 3 }));
    const res = await search(e);
    expect(res.status).toBe(429);
    expect(res.headers['retry-after']).toBe('3');
    expect(e.stats.faults['429_retry_after']).toBe(1);
  });

  it.each(['500', '502', '503'])('%s', async (kind) => {
    const e = await emulatorWith(oneKind(kind));
    const res = await search(e);
    expect(res.status).toBe(Number(kind));
    expect(JSON.parse(res.body.toString()).error).toBeTruthy();
    expect(e.stats.faults[kind]).toBe(1);
  });

  it('reset: headers and part of the body, then the connection drops', async () => {
    const e = await emulatorWith(oneKind('reset'));
    const res = await search(e);
    expect(res.status).toBe(200);
    const declared = Number(res.headers['content-length']);
    expect(res.body.length).toBeGreaterThan(0);
    expect(res.body.length).toBeLessThan(declared);
    expect(res.error).toBeDefined();
    expect(res.complete).toBe(false);
    expect(e.stats.faults.reset).toBe(1);
  });

  it('slow body: arrives whole in several pieces, in flight until the last byte', async () => {
    const e = await emulatorWith(oneKind('slow_body', { slow_total_ms: 200 }));
    let inFlightAtFirstChunk = -1;
    const res = await search(e, () => (inFlightAtFirstChunk = e.stats.inFlight));
    expect(res.status).toBe(200);
    expect(res.complete).toBe(true);
    expect(res.body.length).toBe(Number(res.headers['content-length']));
    expect(JSON.parse(res.body.toString())).toHaveProperty('organic');
    expect(res.chunks).toBeGreaterThan(1);
    expect(inFlightAtFirstChunk).toBe(1);
    expect(e.stats.inFlight).toBe(0);
    expect(e.stats.faults.slow_body).toBe(1);
  });

  it('latency: a delayed but normal answer, counted; baseline latency_ms is not a fault', async () => {
    const e = await emulatorWith({
      rules: [
        { route: 'POST /request', rate: 1, faults: { latency: 1 }, spike_ms: 50 },
        { route: 'GET /countrieslist', latency_ms: 20 },
      ],
    });
    const pending = search(e);
    // The request counts as in flight while it waits.
    while (e.stats.inFlight === 0) await new Promise((r) => setTimeout(r, 2));
    const res = await pending;
    expect(res.status).toBe(200);
    expect(e.stats.faults.latency).toBe(1);
    const c = await rawRequest(`${e.url}/countrieslist`, { headers: AUTH });
    expect(c.status).toBe(200);
    expect(Object.keys(e.stats.faults)).toEqual(['latency']);
  });

  it('truncated_gzip does not touch a response that is not a gzip stream', async () => {
    const e = await emulatorWith(oneKind('truncated_gzip'));
    const res = await search(e);
    expect(res.status).toBe(200);
    expect(res.complete).toBe(true);
    expect(e.stats.faults.truncated_gzip).toBeUndefined();
  });
});

describe('faults on paid routes: was the job started?', () => {
  const createZone = (e: EmulatorHandle, name: string): Promise<RawResponse> =>
    rawRequest(`${e.url}/zone`, {
      method: 'POST',
      headers: AUTH,
      body: JSON.stringify({ zone: { name, type: 'serp' }, plan: { type: 'serp' } }),
    });
  const zoneNames = async (e: EmulatorHandle): Promise<string[]> => {
    const res = await rawRequest(`${e.url}/zone/get_active_zones`, { headers: AUTH });
    return (JSON.parse(res.body.toString()) as { name: string }[]).map((z) => z.name);
  };

  it('a 5xx before the handler: nothing was created', async () => {
    const e = await emulatorWith(oneKind('503', {}, 'POST /zone'));
    expect((await createZone(e, 'z503')).status).toBe(503);
    expect(await zoneNames(e)).not.toContain('z503');
    expect(e.stats.paid.zone_create).toBeUndefined();
  });

  it('reset_before: the connection drops and nothing was created', async () => {
    const e = await emulatorWith(oneKind('reset_before', {}, 'POST /zone'));
    const res = await createZone(e, 'zbefore');
    expect(res.status).toBeUndefined();
    expect(res.error).toBeDefined();
    expect(await zoneNames(e)).not.toContain('zbefore');
    expect(e.stats.faults.reset_before).toBe(1);
  });

  it('reset_after: the connection drops with no answer, yet the zone was created exactly once', async () => {
    const e = await emulatorWith(oneKind('reset_after', { max_per_route: 1 }, 'POST /zone'));
    const res = await createZone(e, 'zafter');
    expect(res.status).toBeUndefined();
    expect(res.error).toBeDefined();
    expect(await zoneNames(e)).toContain('zafter');
    expect(e.stats.paid.zone_create).toBe(1);
    expect(e.stats.faults.reset_after).toBe(1);
    // The cap is reached: the next request is answered normally.
    expect((await createZone(e, 'zafter2')).status).toBe(201);
  });
});

describe('fault decisions', () => {
  const mixed = {
    rules: [
      {
        route: 'GET /countrieslist',
        rate: 0.5,
        faults: { '429': 2, '429_retry_after': 1, '500': 1, '502': 1, '503': 1, reset: 1, slow_body: 1 },
        slow_total_ms: 20,
      },
    ],
  };
  async function sequence(e: EmulatorHandle, n: number): Promise<string[]> {
    const out: string[] = [];
    for (let i = 0; i < n; i++) {
      const res = await rawRequest(`${e.url}/countrieslist`, { headers: AUTH });
      out.push(res.error ? `${res.status ?? 'none'}:error` : String(res.status));
    }
    return out;
  }

  it('are deterministic from the seed and differ for another seed', async () => {
    const a = await sequence(await emulatorWith(mixed, 21), 30);
    const b = await sequence(await emulatorWith(mixed, 21), 30);
    const c = await sequence(await emulatorWith({ ...mixed, seed: 99 }, 21), 30);
    expect(a).toEqual(b);
    expect(a).not.toEqual(c);
    expect(a.filter((s) => s === '200').length).toBeGreaterThan(0);
    expect(a.filter((s) => s !== '200').length).toBeGreaterThan(0);
  });

  it('count each injected fault, readable at /_emulator/stats', async () => {
    const e = await emulatorWith(mixed, 21);
    const seq = await sequence(e, 30);
    const stats = (await (await fetch(`${e.url}/_emulator/stats`)).json()) as { faults: Record<string, number> };
    const total = Object.values(stats.faults).reduce((s, n) => s + n, 0);
    // Slow bodies still answer 200; every other fault shows in the status or as a dropped connection.
    expect(total - (stats.faults.slow_body ?? 0)).toBe(seq.filter((s) => s !== '200').length);
    expect(stats.faults['429'] ?? 0).toBe(
      seq.filter((s) => s === '429').length - (stats.faults['429_retry_after'] ?? 0),
    );
  });

  it('match routes by registered pattern or by path glob, first rule wins', async () => {
    const e = await emulatorWith({
      rules: [
        { route: 'GET /zone/*', rate: 1, faults: { '502': 1 } },
        { route: '* /countries**', rate: 1, faults: { '503': 1 } },
      ],
    });
    expect((await rawRequest(`${e.url}/zone/cost?zone=serp_zone`, { headers: AUTH })).status).toBe(502);
    expect((await rawRequest(`${e.url}/countrieslist`, { headers: AUTH })).status).toBe(503);
    expect((await search(e)).status).toBe(200);
  });

  it('respect max_per_route', async () => {
    const e = await emulatorWith(oneKind('500', { max_per_route: 2 }));
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await search(e)).status);
    expect(statuses).toEqual([500, 500, 200, 200]);
  });
});

describe('fault YAML files', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-'));
  const write = (name: string, text: string): string => {
    const file = path.join(dir, name);
    fs.writeFileSync(file, text);
    return file;
  };

  it('loads a valid file with defaults filled in', () => {
    const file = write(
      'ok.yaml',
      [
        'seed: 7',
        'rules:',
        '  - route: "POST /request"',
        '    rate: 0.1',
        '    faults: { "429": 2, "429_retry_after": 2, "500": 1, "502": 1, "503": 1, reset: 1, truncated_gzip: 1, slow_body: 1 }',
        '    retry_after_s: 1',
        '    max_per_route: 1000',
      ].join('\n'),
    );
    const cfg = loadFaultsFile(file);
    expect(cfg.seed).toBe(7);
    expect(cfg.rules[0]).toMatchObject({ route: 'POST /request', rate: 0.1, latency_ms: 0, max_per_route: 1000 });
    expect(cfg.rules[0]!.faults['429']).toBe(2);
  });

  it('names the file, line, key and the allowed kinds for an unknown fault kind', () => {
    const file = write('kind.yaml', 'rules:\n  - route: "POST /request"\n    rate: 0.5\n    faults: { "418": 1 }\n');
    let err: unknown;
    try {
      loadFaultsFile(file);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    const msg = (err as ConfigError).message;
    expect(msg).toContain(`${file}:4:`);
    expect(msg).toContain('rules.0.faults');
    expect(msg).toContain('truncated_gzip');
  });

  it('reports an out-of-range rate and unknown keys with what is allowed', () => {
    const rate = write('rate.yaml', 'rules:\n  - route: "GET /x"\n    rate: 2\n');
    expect(() => loadFaultsFile(rate)).toThrow(/rate\.yaml:3:\d+: rules\.0\.rate/);
    const key = write('key.yaml', 'rules:\n  - route: "GET /x"\n    probability: 0.1\n');
    expect(() => loadFaultsFile(key)).toThrow(/unknown key\(s\) probability; allowed: route, rate/);
    const top = write('top.yaml', 'rulez: []\n');
    expect(() => loadFaultsFile(top)).toThrow(/allowed: seed, rules/);
  });

  it('reports YAML syntax errors and missing files', () => {
    const bad = write('bad.yaml', 'rules: [\n');
    expect(() => loadFaultsFile(bad)).toThrow(ConfigError);
    expect(() => loadFaultsFile(path.join(dir, 'missing.yaml'))).toThrow(SluiceError);
  });

  it('rejects an invalid config passed to startEmulator', async () => {
    await expect(startEmulator({ faults: { rules: [{ route: 'GET /x', rate: -1 }] } })).rejects.toThrow(/rate/);
  });
});

describe('auth', () => {
  it('answers 401 in plain text', async () => {
    const e = await emulatorWith(undefined);
    const none = await fetch(`${e.url}/countrieslist`);
    expect(none.status).toBe(401);
    expect(await none.text()).toBe('User authentication is required');
    const wrong = await fetch(`${e.url}/countrieslist`, { headers: { authorization: 'Bearer nope' } });
    expect(wrong.status).toBe(401);
    expect(await wrong.text()).toBe('Invalid credentials');
    expect(e.stats.routes['GET /countrieslist']).toBeUndefined();
  });
});
