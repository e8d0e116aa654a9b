/**
 * What the Postgres end-to-end files share: one throwaway cluster (test/support/postgres-server.ts) and one emulator
 * (seed 3, 3,000 records) for the file, started together before its tests and stopped after them.
 */
import { afterAll, beforeAll } from 'vitest';
import type { EmulatorHandle } from '../../src/emulator/server.js';
import { startPostgres, type PostgresServer } from '../support/postgres-server.js';
import { emulator } from './harness.js';

export interface PostgresAndEmulator {
  server: PostgresServer;
  emu: EmulatorHandle;
}

/** Registers the file's hooks; the fields are set once `beforeAll` ran. */
export function postgresAndEmulator(): PostgresAndEmulator {
  const live = {} as PostgresAndEmulator;
  beforeAll(async () => {
    [live.server, live.emu] = await Promise.all([startPostgres(), emulator({ seed: 3, size: 3000 })]);
  }, 120_000);
  afterAll(async () => {
    await live.emu?.close();
    live.server?.stop();
  });
  return live;
}
