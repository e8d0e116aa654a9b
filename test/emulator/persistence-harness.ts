/**
 * Shared by the emulator's state-file tests (persistence*.test.ts): a fresh directory for the state file per test,
 * emulators and child processes stopped after each, and small helpers to drive jobs and deep lookups.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, expect } from 'vitest';
import { startEmulator, type EmulatorHandle } from '../../src/emulator/server.js';
import type { EmulatorOptions } from '../../src/emulator/context.js';
import { call, parseJsonRecords, startJob, waitFinal, type Obj } from './datasets-harness.js';

export const OPTIONS: Partial<EmulatorOptions> = {
  seed: 3,
  size: 600,
  // A filter job stays `scheduled` for an emulated minute, so a job is certainly unfinished when the emulator
  // stops; tests then move the restarted emulator's clock past it.
  jobSchedulingMs: 60_000,
};
export const FILTER = { name: 'followers', operator: '>=', value: 100 };
export const DL = '/datasets/deep_lookup/v1';
/** Seed 3: more matches than any result_limit below. */
export const QUERY = 'Find all robotics companies in Europe';
export const HOUR = 3_600_000;

/** The current test's directory and state file (set afresh before each test by `useStateDir`). */
export let dir: string;
export let stateFile: string;
const started: EmulatorHandle[] = [];
/** Processes a test spawns; killed after it. */
export const children: ChildProcess[] = [];

/** Registers, in the calling test file, the per-test state directory and the clean-up of what a test started. */
export function useStateDir(): void {
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'sluice-emu-state-'));
    stateFile = path.join(dir, 'nested', 'emulator.json');
  });
  afterEach(async () => {
    for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await Promise.all(started.splice(0).map((e) => e.close().catch(() => undefined)));
    await rm(dir, { recursive: true, force: true });
  });
}

export async function emulator(opts: Partial<EmulatorOptions> = {}): Promise<EmulatorHandle> {
  const e = await startEmulator({ ...OPTIONS, ...opts });
  started.push(e);
  return e;
}

/** Moves the emulator's clock forward (routes read `ctx.clock.now()` on every call). */
export function advance(emu: EmulatorHandle, ms: number): void {
  const clock = emu.ctx.clock as { now: () => number };
  const before = clock.now.bind(clock);
  clock.now = () => before() + ms;
}

export async function stats(emu: EmulatorHandle): Promise<Obj> {
  return (await (await fetch(`${emu.url}/_emulator/stats`)).json()) as Obj;
}

export async function snapshotRecords(emu: EmulatorHandle, id: string): Promise<Obj[]> {
  const { meta } = await waitFinal(emu, id);
  expect(meta.status).toBe('ready');
  const dl = await call(emu, 'GET', `/datasets/snapshots/${id}/download`);
  expect(dl.status).toBe(200);
  return parseJsonRecords(dl.bytes);
}

/** The records of the same job on an emulator that never stopped. */
export async function referenceRecords(request: Obj): Promise<{ id: string; records: Obj[] }> {
  const ref = await emulator();
  const id = await startJob(ref, request);
  advance(ref, HOUR);
  return { id, records: await snapshotRecords(ref, id) };
}

export async function dl(
  emu: EmulatorHandle,
  method: string,
  p: string,
  body?: unknown,
): Promise<{ status: number; body: Obj }> {
  const res = await call(emu, method, `${DL}${p}`, body === undefined ? {} : { json: body });
  return { status: res.status, body: res.body as Obj };
}

export async function keep(emu: EmulatorHandle): Promise<EmulatorHandle> {
  return emu;
}

export function repoRoot(): string {
  return path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
}

export function serverModule(): string {
  return path.join(repoRoot(), 'src/emulator/server.ts');
}

export function firstLine(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.once('line', (line) => {
      lines.close();
      resolve(line.trim());
    });
    child.once('exit', (code) => reject(new Error(`the emulator process exited (${code}) before listening`)));
  });
}
