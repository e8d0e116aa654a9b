/**
 * Shared by the deep-lookup tests (deep-lookup*.test.ts): one seeded emulator per test file whose emulated time the
 * tests move by hand, and small helpers to call `/datasets/deep_lookup/v1` and check its answers.
 */
import { afterAll, beforeAll, expect } from 'vitest';
import { startEmulator, type EmulatorHandle } from '../../src/emulator/server.js';

export const AUTH = { authorization: 'Bearer emulator-key', 'content-type': 'application/json' };
export const BASE = '/datasets/deep_lookup/v1';
export const MONEY = /^\$\d+\.\d{2}$/;
/** Seed 1: 42 entities satisfy it. */
export const AI_QUERY = 'Find all AI startups founded after 2020 with more than 50 employees';
/** Seed 1: more than a thousand. */
export const ROBOTICS = 'Find all robotics companies in Europe';
/** Seed 1: nothing satisfies it. */
export const NOTHING = 'Find all unicorns on island 25';
export type Obj = Record<string, any>;

/** The emulator of the current test file (started by `useDeepLookupEmulator`). */
let emu: EmulatorHandle;
/** Emulated time under the test's control: routes read `ctx.clock.now()` on every call. */
export let clock: { t: number; advance(ms: number): void };

/** Registers, in the calling test file, the start and stop of its emulator (seed 1, clock moved by hand). */
export function useDeepLookupEmulator(): void {
  beforeAll(async () => {
    emu = await startEmulator({ seed: 1 });
    const c = { t: emu.ctx.clock.now(), advance: (ms: number) => (c.t += ms) };
    (emu.ctx.clock as { now: () => number }).now = () => c.t;
    clock = c;
  });
  afterAll(() => emu.close());
}

export async function call(method: string, path: string, body?: unknown, raw?: string): Promise<Response> {
  return fetch(`${emu.url}${BASE}${path}`, {
    method,
    headers: AUTH,
    ...(raw !== undefined ? { body: raw } : body !== undefined && { body: JSON.stringify(body) }),
  });
}

export async function json(method: string, path: string, body?: unknown): Promise<{ status: number; body: Obj }> {
  const res = await call(method, path, body);
  return { status: res.status, body: (await res.json()) as Obj };
}

export function expectDlError(r: { status: number; body: Obj }, status: number, code: string, message?: RegExp): void {
  expect(r.status).toBe(status);
  expect(r.body).toEqual({ error: { code, message: expect.any(String), details: expect.any(String) } });
  if (message) expect(r.body.error.message).toMatch(message);
}

export async function trigger(item: Obj): Promise<string> {
  const r = await json('POST', '/trigger', [item]);
  expect(r.status).toBe(200);
  return r.body.request_id as string;
}

/** Triggers and moves emulated time past the end of the request. */
export async function completed(item: Obj): Promise<string> {
  const id = await trigger(item);
  clock.advance(24 * 3_600_000);
  expect((await json('GET', `/request/${id}/status`)).body.status).toBe('completed');
  return id;
}

export const paid = (kind: string): number => emu.stats.paid[kind] ?? 0;
