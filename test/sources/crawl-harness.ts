/** What the crawl source tests share: a real emulator, a client for it, and a source context on in-memory state. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ServiceClient } from '../../src/client/index.js';
import { createClient } from '../../src/client/index.js';
import type { Counters, Logger, SourceContext } from '../../src/core/types.js';
import type { ComponentDeps } from '../../src/contracts/component.js';
import { startEmulator, type EmulatorHandle } from '../../src/emulator/server.js';
import type { EmulatorOptions } from '../../src/emulator/context.js';
import { MemoryStateStore } from '../../src/state/state-store.js';
import { PaidLedger } from '../../src/state/paid-ledger.js';

export const API_KEY = 'emulator-key';

export interface Harness {
  emu: EmulatorHandle;
  client: ServiceClient;
  deps: ComponentDeps;
  baseDir: string;
  warnings: string[];
  close(): Promise<void>;
}

export async function startHarness(opts: Partial<EmulatorOptions> = {}): Promise<Harness> {
  const emu = await startEmulator({ apiKey: API_KEY, ...opts });
  const client = createClient({
    baseUrl: emu.url,
    apiKey: API_KEY,
    connections: 64,
    retry: { retries: 5, baseDelayMs: 20, maxDelayMs: 2000 },
  });
  const baseDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-'));
  const warnings: string[] = [];
  const log = quietLogger(warnings);
  return {
    emu,
    client,
    baseDir,
    warnings,
    deps: { log, baseDir, client: async () => client },
    close: async () => {
      await client.close();
      await emu.close();
    },
  };
}

export function quietLogger(warnings: string[] = []): Logger {
  return {
    debug: () => undefined,
    info: () => undefined,
    warn: (m) => warnings.push(m),
    error: (m) => warnings.push(m),
  };
}

/** A source context on in-memory state; `h` gives the logger and base directory (a harness, or just those two). */
export function sourceContext(
  h: { deps: { log: Logger }; baseDir: string },
  state = new MemoryStateStore(),
  extra: Partial<Omit<SourceContext, 'state' | 'counters' | 'paid'>> = {},
): SourceContext & { state: MemoryStateStore; counters: Counters; paid: PaidLedger } {
  return {
    signal: new AbortController().signal,
    log: h.deps.log,
    state,
    paid: PaidLedger.open(state, 1),
    counters: { records: 0, bytes: 0, retries: 0, deadLetters: 0 },
    deadLetter: () => undefined,
    baseDir: h.baseDir,
    dryRun: false,
    ...extra,
  };
}

interface EmulatorStats {
  routes: Record<string, number>;
  faults: Record<string, number>;
  routeMaxInFlight: Record<string, number>;
}

/** The emulator's counters, read over HTTP as a test outside the process would. */
export async function stats(h: Harness): Promise<EmulatorStats> {
  const res = await fetch(`${h.emu.url}/_emulator/stats`);
  return (await res.json()) as EmulatorStats;
}

export async function resetStats(h: Harness): Promise<void> {
  await fetch(`${h.emu.url}/_emulator/stats`, { method: 'DELETE' });
}

export const REQUEST_ROUTE = 'POST /request';

/** `POST /request` calls the emulator answered with a page (not with an injected 429). */
export function pagesServed(s: EmulatorStats): number {
  const faults429 = (s.faults['429'] ?? 0) + (s.faults['429_retry_after'] ?? 0);
  return (s.routes[REQUEST_ROUTE] ?? 0) - faults429;
}
