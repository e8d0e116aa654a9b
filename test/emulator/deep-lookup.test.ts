/**
 * The deep-lookup API of the emulator over real HTTP: previews, triggering a request, cancelling it, and the whole
 * flow at a scaled clock. (A request's progress, download and enrichment: deep-lookup-request.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import { startEmulator } from '../../src/emulator/server.js';
import {
  AI_QUERY,
  AUTH,
  BASE,
  MONEY,
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

describe('POST /preview and GET /preview/{id}', () => {
  it('creates a dld_ preview whose columns name example values, then moves pending → processing → completed', async () => {
    const created = await json('POST', '/preview', [{ query: AI_QUERY }]);
    expect(created.status).toBe(200);
    expect(created.body.preview_id).toMatch(/^dld_[a-z0-9]+$/);
    expect(created.body.columns).toEqual([expect.objectContaining({ company_name: expect.any(String) })]);
    const id = created.body.preview_id as string;

    const states: string[] = [];
    for (let i = 0; i < 6; i++) {
      const p = await json('GET', `/preview/${id}`);
      expect(p.status).toBe(200);
      expect(p.body).toMatchObject({ preview_id: id, query: AI_QUERY, result_limit: 10 });
      if (p.body.status !== 'completed') expect(p.body.sample_data).toEqual([]);
      states.push(p.body.status);
      clock.advance(900);
    }
    expect(states[0]).toBe('pending');
    expect(states).toContain('processing');
    expect(states.at(-1)).toBe('completed');
    const done = await json('GET', `/preview/${id}`);
    expect(done.body.sample_data).toHaveLength(10);
    expect(done.body.sample_data[0]).toEqual(created.body.columns[0]);
  });

  it('refuses a query that does not start with "Find all", invalid JSON and a wrong body shape with INVALID_QUERY', async () => {
    expectDlError(await json('POST', '/preview', [{ query: 'Show me AI startups' }]), 400, 'INVALID_QUERY', /Find all/);
    expectDlError(await json('POST', '/preview', [{}]), 400, 'INVALID_QUERY', /query/);
    expectDlError(
      await json('POST', '/preview', [{ query: 'Find all a' }, { query: 'Find all b' }]),
      400,
      'INVALID_QUERY',
    );
    const bad = await call('POST', '/preview', undefined, '[{"query": ');
    expectDlError({ status: bad.status, body: (await bad.json()) as Obj }, 400, 'INVALID_QUERY', /JSON/);
  });

  it('accepts the bare object the official examples send', async () => {
    const r = await json('POST', '/preview', { query: ROBOTICS });
    expect(r.status).toBe(200);
    expect(r.body.preview_id).toMatch(/^dld_/);
  });

  it('unknown preview → 404 REQUEST_NOT_FOUND; `#fail-preview` ends failed', async () => {
    expectDlError(await json('GET', '/preview/dld_nope'), 404, 'REQUEST_NOT_FOUND', /dld_nope/);
    const id = (await json('POST', '/preview', [{ query: 'Find all drones #fail-preview' }])).body.preview_id;
    clock.advance(10_000);
    const p = await json('GET', `/preview/${id}`);
    expect(p.body.status).toBe('failed');
    expect(p.body.error.code).toBe('PROCESSING_ERROR');
  });

  it('POST /enhance_query rewrites a query and checks it', async () => {
    const r = await json('POST', '/enhance_query', [{ query: ROBOTICS }]);
    expect(r.status).toBe(200);
    expect(r.body.enhanced_query).toMatch(/^Find all robotics companies in Europe, with/);
    expectDlError(await json('POST', '/enhance_query', [{ query: 'robots' }]), 400, 'INVALID_QUERY');
  });
});

describe('POST /trigger', () => {
  it('from a preview: ai_ id, queued, max_cost = result_limit × $1.00, one paid trigger', async () => {
    const before = paid('trigger');
    const preview = (await json('POST', '/preview', [{ query: ROBOTICS }])).body.preview_id;
    const r = await json('POST', '/trigger', [{ preview_id: preview, result_limit: 25 }]);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      request_id: expect.stringMatching(/^ai_[a-z0-9]+$/),
      status: 'queued',
      max_cost: '$25.00',
    });
    expect(paid('trigger')).toBe(before + 1);
    const status = await json('GET', `/request/${r.body.request_id}/status`);
    expect(status.body.result_limit).toBe(25);
  });

  it('without result_limit uses 100; with a spec the request has the spec columns', async () => {
    const plain = await json('POST', '/trigger', [{ query: ROBOTICS }]);
    expect(plain.body.max_cost).toBe('$100.00');
    const spec = {
      name: 'robots',
      query: ROBOTICS,
      title: 'Robot makers',
      columns: [
        { name: 'company_name', description: 'Name', type: 'enrichment' },
        { name: 'ceo_name', description: 'Chief executive', type: 'enrichment' },
        { name: 'is_hardware', description: 'Builds hardware', type: 'constraint' },
      ],
    };
    const id = await completed({ query: ROBOTICS, spec, result_limit: 5 });
    const got = await json('GET', `/request/${id}`);
    expect(got.body.title).toBe('Robot makers');
    expect(got.body.columns).toEqual(spec.columns);
    expect(got.body.data).toHaveLength(5);
    for (const row of got.body.data) {
      expect(Object.keys(row)).toEqual(['company_name', 'ceo_name', 'is_hardware']);
      expect(row.is_hardware).toBe(true);
    }
  });

  it('refuses bad input without charging: 400 INVALID_QUERY, 404 for an unknown preview, 402 above the balance', async () => {
    const before = paid('trigger');
    expectDlError(await json('POST', '/trigger', [{ query: 'AI startups' }]), 400, 'INVALID_QUERY', /Find all/);
    expectDlError(
      await json('POST', '/trigger', [{ query: ROBOTICS, result_limit: 0 }]),
      400,
      'INVALID_QUERY',
      /result_limit/,
    );
    expectDlError(
      await json('POST', '/trigger', [{ query: ROBOTICS, spec: { columns: [{ name: 'x', type: 'filter' }] } }]),
      400,
      'INVALID_QUERY',
      /spec\.columns\.type/,
    );
    expectDlError(await json('POST', '/trigger', [{ preview_id: 'dld_nope' }]), 404, 'REQUEST_NOT_FOUND', /dld_nope/);
    const poor = await json('POST', '/trigger', [{ query: ROBOTICS, result_limit: 20_000 }]);
    expectDlError(poor, 402, 'INSUFFICIENT_CREDITS', /\$20000\.00/);
    expect(paid('trigger')).toBe(before);
  });
});

describe('POST /request/{id}/cancel', () => {
  it('freezes a running request; a second cancel answers the same; the partial result downloads', async () => {
    const id = await trigger({ query: ROBOTICS, result_limit: 200 });
    clock.advance(40_000);
    const r = await json('POST', `/request/${id}/cancel`);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ request_id: id, status: 'cancelled', total_cost: expect.stringMatching(MONEY) });
    const matched = r.body.matched_records as number;
    expect(matched).toBeGreaterThan(0);
    expect(matched).toBeLessThan(200);
    expect(r.body.total_cost).toBe(`$${matched}.00`);

    clock.advance(24 * 3_600_000);
    expect((await json('POST', `/request/${id}/cancel`)).body).toEqual(r.body);
    const s = (await json('GET', `/request/${id}/status`)).body;
    expect(s).toMatchObject({ status: 'cancelled', matched_records: matched });
    const rows = (await (await call('GET', `/request/${id}/download`)).json()) as Obj[];
    expect(rows).toHaveLength(matched);
  });

  it('a finished request cannot be cancelled (409)', async () => {
    const id = await completed({ query: ROBOTICS, result_limit: 2 });
    expectDlError(await json('POST', `/request/${id}/cancel`), 409, 'PROCESSING_ERROR', /already ended completed/);
  });
});

describe('the whole flow at a scaled clock', () => {
  it('preview → trigger → status → get → enrich → download with real waiting', async () => {
    const fast = await startEmulator({ seed: 1, timeScale: 20_000 });
    const url = (p: string): string => `${fast.url}${BASE}${p}`;
    const post = async (p: string, b: unknown): Promise<Obj> =>
      (await (await fetch(url(p), { method: 'POST', headers: AUTH, body: JSON.stringify(b) })).json()) as Obj;
    const get = async (p: string): Promise<Obj> => (await (await fetch(url(p), { headers: AUTH })).json()) as Obj;
    const until = async (f: () => Promise<boolean>): Promise<void> => {
      // A deadline, not a count of polls: a loaded machine is slow, not wrong.
      for (const deadline = Date.now() + 30_000; Date.now() < deadline && !(await f());)
        await new Promise((r) => setTimeout(r, 5));
      expect(await f()).toBe(true);
    };
    try {
      const { preview_id } = await post('/preview', [{ query: AI_QUERY }]);
      await until(async () => (await get(`/preview/${preview_id}`)).status === 'completed');
      const { request_id, max_cost } = await post('/trigger', [{ preview_id, result_limit: 10 }]);
      expect(max_cost).toBe('$10.00');
      await until(async () => (await get(`/request/${request_id}/status`)).status === 'completed');
      expect((await get(`/request/${request_id}`)).data).toHaveLength(10);
      const e = await post(`/request/${request_id}/enrich`, [{ column_name: 'funding', query: 'Total funding' }]);
      expect(e.max_additional_cost).toBe('$0.50');
      // No status: the enrichment is complete once its cost is counted (10 records × $0.05 on top of $10.00).
      await until(async () => (await get(`/request/${request_id}`)).total_cost === '$10.50');
      const rows = (await (
        await fetch(url(`/request/${request_id}/download?format=json`), { headers: AUTH })
      ).json()) as Obj[];
      expect(rows).toHaveLength(10);
      expect(rows.filter((r) => /^\$\d+\.\dM$/.test(r.funding)).length).toBeGreaterThan(5);
      expect(fast.stats.paid).toEqual({ trigger: 1, enrich: 1 });
    } finally {
      await fast.close();
    }
  });
});
