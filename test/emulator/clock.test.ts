/**
 * The emulator's calendar: `now` pins the clock, `POST /_emulator/clock` moves it, and under a pinned clock datasets
 * gain records and places gain reviews deterministically; `GET /_emulator/counters` reports what the account paid.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GROWTH_FROM, collectedAt, newPerDay, sizeAt } from '../../src/emulator/datasets/growth.js';
import { reviewIdsAt, reviewsPage } from '../../src/emulator/data/reviews.js';
import { startEmulator, type EmulatorHandle } from '../../src/emulator/server.js';
import { runCli } from '../../src/cli/cli.js';
import { memoryIo } from '../cli/memory-io.js';
import { COMPANIES, filterRecords, type Obj } from './datasets-harness.js';

const DAY = 86_400_000;
const START = '2025-03-01T00:30:00.000Z';

let emu: EmulatorHandle;
beforeAll(async () => {
  emu = await startEmulator({ size: 200, timeScale: 20, jobSchedulingMs: 200, now: Date.parse(START) });
});
afterAll(() => emu.close());

async function admin(path: string, body?: unknown): Promise<{ status: number; body: Obj }> {
  const res = await fetch(`${emu.url}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    ...(body !== undefined && { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  });
  return { status: res.status, body: (await res.json()) as Obj };
}

describe('growth of the data under a pinned clock', () => {
  it('adds about 1% of the records a day, each collected at a whole hour after every original record', () => {
    expect(newPerDay(200)).toBe(2);
    expect(sizeAt(1, 200, GROWTH_FROM - 1, true)).toBe(200);
    expect(sizeAt(1, 200, GROWTH_FROM + 10 * DAY, true)).toBe(220);
    // Unpinned clocks never grow the data: the emulator's other users keep their fixed datasets.
    expect(sizeAt(1, 200, GROWTH_FROM + 10 * DAY, false)).toBe(200);
    let last = 0;
    for (let k = 0; k < 50; k++) {
      const at = collectedAt(1, 200, k);
      expect(at % 3_600_000).toBe(0);
      expect(at).toBeGreaterThan(last);
      expect(sizeAt(1, 200, at, true)).toBe(201 + k);
      expect(sizeAt(1, 200, at - 1, true)).toBe(200 + k);
      last = at;
    }
  });

  it('shows new reviews first and keeps the earlier ones, with their dates, night after night', () => {
    const fid = '0x89c259a9b3117469:0xd134e199a405a163';
    const night1 = Date.parse(START);
    const night2 = night1 + 5 * DAY;
    const ids1 = reviewIdsAt(1, fid, night1);
    const ids2 = reviewIdsAt(1, fid, night2);
    expect(ids2.length).toBeGreaterThan(ids1.length);
    expect(ids2.slice(ids2.length - ids1.length)).toEqual(ids1);
    const page = (now: number): Obj[] => reviewsPage(1, fid, 0, new Date(now), true).reviews;
    const old = page(night1);
    const later = page(night2);
    const shift = ids2.length - ids1.length;
    const same = later.slice(shift).map((r) => [r.review_id, r.date]);
    expect(same).toEqual(old.slice(0, same.length).map((r) => [r.review_id, r.date]));
    // The ids of a full crawl at each time are exactly those pages served.
    expect(page(night2).map((r) => r.review_id)).toEqual(ids2.slice(0, 10));
  });
});

describe('POST /_emulator/clock and GET /_emulator/counters', () => {
  it('moves the clock forwards by a duration or to a date, and refuses anything else', async () => {
    const before = Date.parse((await admin('/_emulator/clock')).body.now as string);
    expect(before).toBeGreaterThanOrEqual(Date.parse(START));
    const moved = await admin('/_emulator/clock', { advance: '2d' });
    expect(moved.status).toBe(200);
    expect(Date.parse(moved.body.now as string) - before).toBeGreaterThanOrEqual(2 * DAY);
    expect(moved.body.pinned).toBe(true);
    const set = await admin('/_emulator/clock', { now: '2025-03-10T00:30:00Z' });
    expect(Date.parse(set.body.now as string)).toBeGreaterThanOrEqual(Date.parse('2025-03-10T00:30:00Z'));
    for (const bad of [{ advance: 'soon' }, { now: 'yesterday' }, { advance: '1d', now: START }]) {
      const r = await admin('/_emulator/clock', bad);
      expect(r.status).toBe(400);
      expect(r.body.error).toMatch(/advance/);
    }
  });

  it('a filter job sees the records collected by then, and charges them once', async () => {
    await admin('/_emulator/clock', { now: '2025-02-15T00:30:00Z' });
    const after = '2025-02-10T00:00:00Z';
    const cursor = { name: 'timestamp', operator: '>', value: after };
    const start = (await admin('/_emulator/counters')).body;
    const first = await filterRecords(emu, { dataset_id: COMPANIES, filter: cursor });
    // Records collected from 10 to 15 February: 2 a day.
    const expected = sizeAt(1, 200, Date.parse('2025-02-15T00:30:00Z'), true) - sizeAt(1, 200, Date.parse(after), true);
    expect(first).toHaveLength(expected);
    expect(first.every((r) => r.timestamp > after)).toBe(true);
    const mid = (await admin('/_emulator/counters')).body;
    expect(mid.records_charged - start.records_charged).toBe(expected);
    expect(mid.paid.filter - (start.paid.filter ?? 0)).toBe(1);

    await admin('/_emulator/clock', { advance: '1d' });
    const second = await filterRecords(emu, { dataset_id: COMPANIES, filter: cursor });
    expect(second).toHaveLength(expected + 2);
    expect(second.slice(0, expected)).toEqual(first);
    const end = (await admin('/_emulator/counters')).body;
    expect(end.records_charged - mid.records_charged).toBe(expected + 2);
  });
});

describe('sluice emulator --now', () => {
  it('starts the clock at the date given', async () => {
    const io = memoryIo({});
    const done = runCli(['emulator', '--port', '0', '--now', '2025-04-01T02:30:00Z'], io);
    let url: string | undefined;
    for (let i = 0; i < 500 && url === undefined; i++) {
      url = /listening on (\S+)/.exec(io.stdout.join('\n'))?.[1];
      if (url === undefined) await new Promise((r) => setTimeout(r, 10));
    }
    const clock = (await (await fetch(`${url}/_emulator/clock`)).json()) as Obj;
    io.stop();
    expect(await done).toBe(0);
    expect(clock.pinned).toBe(true);
    expect(Date.parse(clock.now as string)).toBeGreaterThanOrEqual(Date.parse('2025-04-01T02:30:00Z'));
    expect(Date.parse(clock.now as string)).toBeLessThan(Date.parse('2025-04-02T00:00:00Z'));
  });

  it('refuses a date it cannot read', async () => {
    const io = memoryIo({});
    expect(await runCli(['emulator', '--port', '0', '--now', 'tomorrow'], io)).not.toBe(0);
    expect(io.stderr.join('\n')).toMatch(/--now must be an ISO date/);
  });
});
