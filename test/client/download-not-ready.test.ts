/**
 * A snapshot download that answers 202 "Snapshot is building" after the status said ready (docs/service.md §1.2),
 * served by the emulator's `not_ready` fault: the client waits it out within the caller's budget (Retry-After
 * honoured) and then downloads; without a budget, or when the service asks for a longer wait than the budget
 * leaves, it fails with a terminal NotReadyError.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NotReadyError, createClient, pollSnapshot, type ServiceClient } from '../../src/client/index.js';
import { isTransient } from '../../src/core/retry.js';
import { COMPANY_PROFILES_ID } from '../../src/emulator/data/company-profiles.js';
import { startEmulator, type EmulatorHandle } from '../../src/emulator/server.js';

const POLL = { intervalMs: 5, maxIntervalMs: 20, timeoutMs: 20_000 };
const DOWNLOAD = 'GET /datasets/snapshots/*/download';

/** An emulator whose first `max` downloads answer 202 after ready, asking for `retryAfterS` seconds. */
async function emulatorWith(max: number, retryAfterS: number): Promise<EmulatorHandle> {
  return startEmulator({
    seed: 5,
    size: 300,
    timeScale: 2000,
    faults: {
      rules: [{ route: DOWNLOAD, rate: 1, max_per_route: max, retry_after_s: retryAfterS, faults: { not_ready: 1 } }],
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

describe('download answering 202 after ready', () => {
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

  it('is waited out within the budget, then the records come', async () => {
    const id = await readySnapshot(client);
    const waits: number[] = [];
    const dl = await client.datasets.download(
      id,
      { format: 'jsonl' },
      { notReadyWaitMs: 60_000, onNotReady: ({ attempt }) => waits.push(attempt) },
    );
    expect(dl.status).toBe(200);
    expect(await lines(dl.body)).toBe(20);
    // Two 202s (the fault's limit), each followed by a wait and a new request.
    expect(waits).toEqual([1, 2]);
    expect(emu.stats.faults.not_ready).toBe(2);
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
