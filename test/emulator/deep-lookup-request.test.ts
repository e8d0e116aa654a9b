/**
 * The deep-lookup API of the emulator over real HTTP: a request over emulated time, its download in every format,
 * and enriching it. (Previews, triggering, cancelling, the whole flow: deep-lookup.test.ts.)
 */
import { parse as parseCsv } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { startEmulator } from '../../src/emulator/server.js';
import {
  AI_QUERY,
  AUTH,
  BASE,
  NOTHING,
  ROBOTICS,
  call,
  clock,
  completed,
  expectDlError,
  json,
  paid,
  trigger,
  useDeepLookupEmulator,
  type Obj,
} from './deep-lookup-harness.js';

useDeepLookupEmulator();

describe('a request over emulated time', () => {
  it('status and data advance queued → identifying → generating_schema → generating → completed/done', async () => {
    const id = await trigger({ query: AI_QUERY, result_limit: 30 });
    const seen: Obj[] = [];
    for (let i = 0; i < 40; i++) {
      const s = (await json('GET', `/request/${id}/status`)).body;
      const g = (await json('GET', `/request/${id}`)).body;
      seen.push({ ...s, step: g.step, data: g.data.length, columns: g.columns.length, cost: g.total_cost });
      if (s.status === 'completed') break;
      clock.advance(1_000);
    }
    const first = seen[0]!;
    expect(first).toMatchObject({
      status: 'queued',
      progress: 0,
      matched_records: 0,
      is_trial: false,
      result_limit: 30,
    });
    expect(first.columns).toBe(0);
    const steps = [...new Set(seen.map((s) => s.step))];
    expect(steps).toEqual(['identifying', 'generating_schema', 'generating', 'done']);
    expect(seen.some((s) => s.status === 'running' && s.matched_records > 0 && s.matched_records < 30)).toBe(true);
    for (let i = 1; i < seen.length; i++) {
      for (const k of ['progress', 'matched_records', 'pages_read', 'pages_considered'])
        expect(seen[i]![k]).toBeGreaterThanOrEqual(seen[i - 1]![k]);
      expect(seen[i]!.data).toBe(seen[i]!.matched_records);
    }
    const last = seen.at(-1)!;
    expect(last).toMatchObject({ status: 'completed', progress: 100, matched_records: 30, columns: 6, cost: '$30.00' });
    expect(last.pages_read).toBeLessThanOrEqual(last.pages_considered);
  });

  it('the finished request: every field, money as "$" strings, rows keyed by column, constraints hold', async () => {
    const id = await completed({ query: AI_QUERY, result_limit: 100 });
    const { status, body } = await json('GET', `/request/${id}`);
    expect(status).toBe(200);
    expect(body).toMatchObject({ request_id: id, query: AI_QUERY, status: 'completed', step: 'done' });
    // The service documents no enrichment status (docs/service.md §4.2): the emulator invents none.
    expect(body).not.toHaveProperty('enrichments');
    expect(body.title).toBe('AI startups founded after 2020 with more than 50 employees');
    // Only 42 entities satisfy this query (seed 1): fewer than the limit.
    expect(body.matched_records).toBe(42);
    expect(body.data).toHaveLength(42);
    expect(body.total_cost).toBe('$42.00');
    expect(body.skipped_records).toBeGreaterThan(0);
    expect(body.columns.map((c: Obj) => c.name)).toEqual([
      'company_name',
      'website',
      'founding_date',
      'employee_count',
      'headquarters',
      'industry',
    ]);
    for (const c of body.columns)
      expect(c).toEqual({
        name: expect.any(String),
        description: expect.any(String),
        type: expect.stringMatching(/^(enrichment|constraint)$/),
      });
    expect(body.columns.find((c: Obj) => c.name === 'founding_date').type).toBe('constraint');
    expect(new Set(body.data.map((r: Obj) => r.company_name)).size).toBe(42);
    for (const row of body.data) {
      expect(row.founding_date.slice(0, 4) > '2020').toBe(true);
      expect(row.employee_count).toBeGreaterThan(50);
      expect(row.website).toMatch(/^[a-z0-9]+\.[a-z]+$/);
      expect(row.industry).toBe('Artificial Intelligence');
    }
  });

  it('data depends only on seed and query: a second emulator with the same seed agrees, another seed differs', async () => {
    const id = await completed({ query: ROBOTICS, result_limit: 20 });
    const mine = (await json('GET', `/request/${id}`)).body.data;
    for (const [seed, same] of [
      [1, true],
      [2, false],
    ] as const) {
      const other = await startEmulator({ seed });
      // Its clock moved by hand, as this file's: a fast clock read twice in one millisecond had not moved at all,
      // and the request was still empty.
      let now = other.ctx.clock.now();
      (other.ctx.clock as { now: () => number }).now = () => now;
      try {
        const h = { ...AUTH };
        const t = await fetch(`${other.url}${BASE}/trigger`, {
          method: 'POST',
          headers: h,
          body: JSON.stringify([{ query: ROBOTICS, result_limit: 20 }]),
        });
        const rid = ((await t.json()) as Obj).request_id;
        now += 24 * 3_600_000;
        const data = ((await (await fetch(`${other.url}${BASE}/request/${rid}`, { headers: h })).json()) as Obj).data;
        if (same) expect(data).toEqual(mine);
        else expect(data).not.toEqual(mine);
      } finally {
        await other.close();
      }
    }
  });

  it('unknown request id → 404 REQUEST_NOT_FOUND on every request endpoint', async () => {
    for (const [m, p] of [
      ['GET', '/request/ai_nope'],
      ['GET', '/request/ai_nope/status'],
      ['GET', '/request/ai_nope/download?format=json'],
      ['POST', '/request/ai_nope/cancel'],
    ] as const)
      expectDlError(await json(m, p), 404, 'REQUEST_NOT_FOUND', /ai_nope/);
    expectDlError(
      await json('POST', '/request/ai_nope/enrich', [{ column_name: 'x', query: 'y' }]),
      404,
      'REQUEST_NOT_FOUND',
    );
  });

  it('`#fail` ends failed while generating: error set, no cost, nothing to download', async () => {
    const id = await trigger({ query: 'Find all SaaS companies #fail', result_limit: 50 });
    clock.advance(24 * 3_600_000);
    const s = (await json('GET', `/request/${id}/status`)).body;
    expect(s.status).toBe('failed');
    expect(s.progress).toBeLessThan(100);
    const g = (await json('GET', `/request/${id}`)).body;
    expect(g).toMatchObject({ status: 'failed', step: 'generating', total_cost: '$0.00' });
    expect(g.error.code).toBe('PROCESSING_ERROR');
    expectDlError(await json('GET', `/request/${id}/download`), 409, 'PROCESSING_ERROR', /failed/);
  });
});

describe('GET /request/{id}/download', () => {
  it('409 PROCESSING_ERROR until completed, saying what to wait for', async () => {
    const id = await trigger({ query: ROBOTICS, result_limit: 10 });
    expectDlError(await json('GET', `/request/${id}/download?format=csv`), 409, 'PROCESSING_ERROR', /once .*completed/);
  });

  it('json (also the default): an array of the row objects of GET /request', async () => {
    const id = await completed({ query: ROBOTICS, result_limit: 40 });
    const data = (await json('GET', `/request/${id}`)).body.data;
    const res = await call('GET', `/request/${id}/download?format=json`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.headers.get('content-disposition')).toContain(`${id}.json`);
    expect(await res.json()).toEqual(data);
    const byDefault = await call('GET', `/request/${id}/download`);
    expect(await byDefault.json()).toEqual(data);
  });

  it('csv: a header of the column names, then one line per row with the same values', async () => {
    const id = await completed({ query: AI_QUERY, result_limit: 100 });
    const { data, columns } = (await json('GET', `/request/${id}`)).body;
    const res = await call('GET', `/request/${id}/download?format=csv`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/csv/);
    const text = await res.text();
    const names = columns.map((c: Obj) => c.name);
    expect(text.split('\n')[0]).toBe(names.join(','));
    const records = parseCsv(text, { columns: true }) as Record<string, string>[];
    expect(records).toHaveLength(data.length);
    records.forEach((rec, i) => {
      for (const n of names) expect(rec[n]).toBe(data[i][n] === null ? '' : String(data[i][n]));
    });
    // Quoting: headquarters hold "City, CC".
    expect(text).toMatch(/"[A-Za-z ]+, [A-Z]{2}"/);
  });

  it('a large export streams in pieces (no Content-Length) and parses whole', async () => {
    const id = await completed({ query: ROBOTICS, result_limit: 1_000 });
    const res = await call('GET', `/request/${id}/download?format=json`);
    expect(res.headers.get('content-length')).toBeNull();
    const rows = (await res.json()) as Obj[];
    expect(rows).toHaveLength(1_000);
    expect(new Set(rows.map((r) => r.company_name)).size).toBe(1_000);
  });

  it('a request with no matches downloads an empty array and a header-only csv', async () => {
    const id = await completed({ query: NOTHING, result_limit: 10 });
    expect(await (await call('GET', `/request/${id}/download?format=json`)).json()).toEqual([]);
    expect(await (await call('GET', `/request/${id}/download?format=csv`)).text()).toBe(
      'company_name,website,founding_date,employee_count,headquarters,industry\n',
    );
  });

  it('excel → 400 "not available"; any other format → 400 validation', async () => {
    const id = await completed({ query: ROBOTICS, result_limit: 3 });
    expectDlError(
      await json('GET', `/request/${id}/download?format=excel`),
      400,
      'INVALID_QUERY',
      /excel.*not available/,
    );
    expectDlError(
      await json('GET', `/request/${id}/download?format=xml`),
      400,
      'INVALID_QUERY',
      /must be one of \[json, csv\]/,
    );
  });
});

describe('POST /request/{id}/enrich', () => {
  it('adds a column at once, fills its rows one after another with no status anywhere, and later downloads carry it', async () => {
    const id = await completed({ query: AI_QUERY, result_limit: 20 });
    const before = paid('enrich');
    const r = await json('POST', `/request/${id}/enrich`, [
      { column_name: 'cto_name', query: 'CTO or head of engineering' },
    ]);
    expect(r.status).toBe(200);
    // 20 matched records × $0.05.
    expect(r.body).toEqual({ column_name: 'cto_name', status: 'processing', max_additional_cost: '$1.00' });
    expect(paid('enrich')).toBe(before + 1);

    const now = (await json('GET', `/request/${id}`)).body;
    expect(now.columns.at(-1)).toEqual({
      name: 'cto_name',
      description: 'CTO or head of engineering',
      type: 'enrichment',
    });
    expect(now).not.toHaveProperty('enrichments');
    expect(now.data.every((row: Obj) => row.cto_name === null)).toBe(true);
    expect(now.total_cost).toBe('$20.00');

    // Half way through (4 s + 20 ms per record = 4.4 s for 20): the first half of the rows has its values.
    clock.advance(2_200);
    const half = (await json('GET', `/request/${id}`)).body;
    expect(half.data.slice(10).every((row: Obj) => row.cto_name === null)).toBe(true);
    expect(half.data.slice(0, 10).filter((row: Obj) => row.cto_name !== null).length).toBeGreaterThan(5);
    expect(half.total_cost).toBe('$20.00');

    clock.advance(10_000);
    const later = (await json('GET', `/request/${id}`)).body;
    expect(later).not.toHaveProperty('enrichments');
    expect(later.total_cost).toBe('$21.00');
    const filled = later.data.filter((row: Obj) => typeof row.cto_name === 'string');
    expect(filled.length).toBeGreaterThan(15);
    // The other columns did not change.
    expect(later.data.map(({ cto_name: _, ...rest }: Obj) => rest)).toEqual(
      now.data.map(({ cto_name: _, ...rest }: Obj) => rest),
    );

    const dl = (await (await call('GET', `/request/${id}/download?format=json`)).json()) as Obj[];
    expect(dl).toEqual(later.data);
    const csv = await (await call('GET', `/request/${id}/download?format=csv`)).text();
    expect(csv.split('\n')[0]!.endsWith(',cto_name')).toBe(true);
  });

  it('refuses without charging: running request (409), existing column, several items, bad name (400)', async () => {
    const done = await completed({ query: ROBOTICS, result_limit: 5 });
    const running = await trigger({ query: ROBOTICS, result_limit: 5 });
    const before = paid('enrich');
    expectDlError(
      await json('POST', `/request/${running}/enrich`, [{ column_name: 'ceo', query: 'CEO' }]),
      409,
      'PROCESSING_ERROR',
      /once its status is completed/,
    );
    expectDlError(
      await json('POST', `/request/${done}/enrich`, [{ column_name: 'website', query: 'site' }]),
      400,
      'INVALID_QUERY',
      /already exists/,
    );
    expectDlError(
      await json('POST', `/request/${done}/enrich`, [
        { column_name: 'a', query: 'a' },
        { column_name: 'b', query: 'b' },
      ]),
      400,
      'INVALID_QUERY',
      /exactly one/,
    );
    expectDlError(
      await json('POST', `/request/${done}/enrich`, [{ column_name: 'two words', query: 'x' }]),
      400,
      'INVALID_QUERY',
      /column_name/,
    );
    expectDlError(
      await json('POST', `/request/${done}/enrich`, { column_name: 'c', query: 'c' }),
      400,
      'INVALID_QUERY',
    );
    expect(paid('enrich')).toBe(before);
  });
});
