/**
 * A snapshot download that says "not ready" after the status said ready (docs/service.md §1.2), in both of the
 * service's forms — 202 "Snapshot is building" and 400 {"error": "Snapshot not ready"} — served by the emulator's
 * `not_ready` fault (which answers them in turns), and a parts count answering 400 "Snapshot is not ready" the same
 * way: the client waits them out within the caller's budget (Retry-After honoured) and then answers; without a
 * budget, or when the service asks for a longer wait than the budget leaves, it fails with a terminal NotReadyError.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NotReadyError, createClient, pollSnapshot, type ServiceClient } from '../../src/client/index.js';
import { isTransient } from '../../src/core/retry.js';
import { COMPANY_PROFILES_ID } from '../../src/emulator/data/company-profiles.js';
import { startEmulator, type EmulatorHandle } from '../../src/emulator/server.js';

const POLL = { intervalMs: 5, maxIntervalMs: 20, timeoutMs: 20_000 };
const DOWNLOAD = 'GET /datasets/snapshots/*/download';

const PARTS = 'GET /datasets/snapshots/*/parts';

/**
 * An emulator whose first `max` downloads (and parts counts) say "not ready" after ready, a 202 asking for
 * `retryAfterS` seconds, then a 400, in turns.
 */
async function emulatorWith(max: number, retryAfterS: number): Promise<EmulatorHandle> {
  const rule = { rate: 1, max_per_route: max, retry_after_s: retryAfterS, faults: { not_ready: 1 } };
  return startEmulator({
    seed: 5,
    size: 300,
    timeScale: 2000,
    faults: {
      rules: [
        { route: DOWNLOAD, ...rule },
        { route: PARTS, ...rule },
      ],
    },
  });
}

async function readySnapshot(client: ServiceClient): Promise<string> {
  const { snapshot_id } = await client.datasets.filter({
    dataset_id: COMPANY_PROFILES_ID,
    filter: { name: 'followers', operator: '>=', value: 0 },
    records_limit: 20,
  });
  expect((await pollSnapshot(client, snapshot_id, POLL)).status).toBe('ready');
  return snapshot_id;
}

async function lines(body: NodeJS.ReadableStream): Promise<number> {
  let text = '';
  for await (const c of body) text += String(c);
  return text.split('\n').filter(Boolean).length;
}

describe('download and parts saying "not ready" after ready', () => {
  let emu: EmulatorHandle;
  let client: ServiceClient;
  beforeAll(async () => {
    emu = await emulatorWith(2, 0);
    client = createClient({ baseUrl: emu.url, apiKey: 'emulator-key', retry: { retries: 0 } });
  });
  afterAll(async () => {
    await client.close();
    await emu.close();
  });

  it('is waited out within the budget, in both forms, then the records come', async () => {
    const id = await readySnapshot(client);
    const said: string[] = [];
    const wait = {
      notReadyWaitMs: 60_000,
      intervalMs: 5,
      onNotReady: ({ message }: { message: string }) => said.push(message),
    };
    const dl = await client.datasets.download(id, { format: 'jsonl' }, wait);
    expect(dl.status).toBe(200);
    expect(await lines(dl.body)).toBe(20);
    // A 202, then a 400 (the fault's limit), each followed by a wait and a new request.
    expect(said).toEqual(['Snapshot is building. Try again in a few minutes', 'Snapshot not ready']);
    expect(emu.stats.faults.not_ready).toBe(2);

    said.length = 0;
    expect(await client.datasets.parts(id, { format: 'jsonl', batch_size: 1000 }, wait)).toEqual({ parts: 1 });
    expect(said).toEqual(['Snapshot is not ready', 'Snapshot is not ready']);
  });

  it('without a wait budget a 202 fails at once with a terminal NotReadyError', async () => {
    const local = await emulatorWith(1, 0);
    const c = createClient({ baseUrl: local.url, apiKey: 'emulator-key', retry: { retries: 0 } });
    try {
      const id = await readySnapshot(c);
      const err = await c.datasets.download(id, { format: 'jsonl' }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(NotReadyError);
      expect(isTransient(err)).toBe(false);
      expect((err as NotReadyError).hint).toMatch(/run again later/);
    } finally {
      await c.close();
      await local.close();
    }
  });

  it('honours Retry-After: a wait longer than the budget leaves is not started; the error says it waited', async () => {
    const local = await emulatorWith(1, 3600);
    const c = createClient({ baseUrl: local.url, apiKey: 'emulator-key', retry: { retries: 0 } });
    try {
      const id = await readySnapshot(c);
      const waits: number[] = [];
      const err = await c.datasets
        .download(id, { format: 'jsonl' }, { notReadyWaitMs: 2_000, onNotReady: ({ delayMs }) => waits.push(delayMs) })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(NotReadyError);
      expect((err as NotReadyError).message).toMatch(/Snapshot is building.*after 2 s of waiting/);
      expect(waits).toEqual([]);
    } finally {
      await c.close();
      await local.close();
    }
  });
});
