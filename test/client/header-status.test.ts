/**
 * The real status is the status (docs/service.md §5.6): once a request reaches the page fetcher the service answers
 * 200 and puts the real status in `x-brd-status-code` and its code in `x-brd-err-code` / `x-brd-error-code`. The one
 * client reads them first: a 429 given so counts against the 429 budget and is retried like one given outright, and
 * every code leads its message with a fix that fits it — the API key's only where the answer is about the key.
 */
import { describe, expect, it } from 'vitest';
import { RateBudgetSpentError, ServiceError } from '../../src/client/index.js';
import { client, closeAfterEach, emulator, scripted, send } from './http-helpers.js';

closeAfterEach();

const ROUTE = 'POST /request';
const SEARCH = 'https://www.google.com/search?q=espresso+machines&brd_json=1';

/** A zone the service throttles for `throttle_s` emulated seconds from the first request (`sr_rate_limit`). */
const throttled = (throttleS: number): unknown => ({
  rules: [{ route: ROUTE, rate: 1, faults: { sr_rate_limit: 1 }, max_per_route: 1, throttle_s: throttleS }],
});

describe('a 429 in x-brd-status-code (a throttled zone)', () => {
  it('counts against the one 429 budget: a zone throttled for long stops the call at the budget', async () => {
    const e = await emulator(throttled(3600));
    const { c } = client(e.url, { throttle: { budget: 3 }, retry: { retries: 10, baseDelayMs: 1, maxDelayMs: 5 } });
    const err = await c.request.page({ zone: 'serp_zone', url: SEARCH }).catch((x: unknown) => x);
    expect(err).toBeInstanceOf(RateBudgetSpentError);
    // Three answers of 429, each an HTTP 200: the budget saw them, and nothing more was sent.
    expect(e.stats.faults.sr_rate_limit).toBe(3);
    expect(e.stats.routes[ROUTE]).toBe(3);
    expect(c.answers429()).toEqual({ inWindow: 3, total: 3 });
  });

  it('is retried like a 429 given outright, its code leading the message, and the page arrives after', async () => {
    const e = await emulator(throttled(0.05));
    const { c, retries } = client(e.url, { retry: { retries: 5, baseDelayMs: 100, maxDelayMs: 1000 } });
    const notices: ServiceError[] = [];
    const out = await c.request.page({ zone: 'serp_zone', url: SEARCH }, { onRetry: (n) => notices.push(n.error) });
    expect((out.payload as { general: { query: string } }).general.query).toBe('espresso machines');
    expect(retries.length).toBeGreaterThan(0);
    expect(notices[0]).toMatchObject({ status: 429, code: 'sr_rate_limit', transient: true });
    expect(notices[0]!.serviceMessage).toMatch(/^sr_rate_limit: the service throttles zone "serp_zone"/);
    expect(c.answers429().total).toBe(e.stats.faults.sr_rate_limit);
  });
});

/** A page request through `zone` to a server answering every request with an empty 200 and these headers. */
async function refusal(
  zone: string,
  headers: Record<string, string>,
): Promise<{ err: ServiceError; retries: unknown[]; hits: string[] }> {
  const s = await scripted((_req, res) => send(res, 200, '', headers));
  const { c, retries } = client(s.url);
  const err = (await c.request.page({ zone, url: SEARCH }).catch((x: unknown) => x)) as ServiceError;
  return { err, retries, hits: s.hits };
}

describe('the service’s codes lead the message, with a fix that fits', () => {
  it('a zone of the wrong type (403 client_10090): the code, the zone and the type it must have', async () => {
    const e = await emulator();
    const { c } = client(e.url);
    const err = (await c.request.page({ zone: 'static_zone', url: SEARCH }).catch((x: unknown) => x)) as ServiceError;
    expect(err).toMatchObject({ status: 403, code: 'client_10090', transient: false });
    expect(err.message).toMatch(
      /^POST \/request: 403: client_10090: zone "static_zone" cannot fetch pages through \/request: it must be a zone of type serp or unblocker \(the service: /,
    );
    expect(err.hint).toMatch(/set source\.zone to a zone of type serp or unblocker/);
    expect(err.hint).not.toMatch(/API key|Admin or Ops/);
    expect(e.stats.routes[ROUTE]).toBe(1);
  });

  it('the same refusal as a 200 with the status in x-brd-status-code reads the same', async () => {
    const { err, retries } = await refusal('my_browser', {
      'x-brd-status-code': '403',
      'x-brd-err-code': 'client_10090',
      'x-brd-err-msg': 'Zone type browser_api is not supported for this request',
    });
    expect(err).toMatchObject({ status: 403, code: 'client_10090', transient: false });
    expect(err.message).toMatch(/403: client_10090: zone "my_browser" cannot fetch pages .* serp or unblocker/);
    expect(retries).toEqual([]);
  });

  it('a policy refusal: its code first, not the key’s fix, not retried', async () => {
    const { err, retries, hits } = await refusal('z', {
      'x-brd-status-code': '403',
      'x-brd-err-code': 'policy_20020',
      'x-brd-err-msg': 'Bad Port used',
    });
    expect(err).toMatchObject({ status: 403, code: 'policy_20020', transient: false });
    expect(err.serviceMessage).toBe(
      "policy_20020: the service's usage policy refuses this request (the service: Bad Port used)",
    );
    expect(err.hint).toMatch(/compliance/);
    expect(err.hint).not.toMatch(/API key/);
    expect(retries).toEqual([]);
    expect(hits).toHaveLength(1);
  });

  it('a peer failure (502 peer_*) is retried; a refused certificate is not', async () => {
    const peer = await scripted((_req, res, hit) =>
      hit === 1
        ? send(res, 200, '', {
            'x-brd-status-code': '502',
            'x-brd-err-code': 'peer_30002',
            'x-brd-err-msg': 'Peer lost',
          })
        : send(res, 200, { organic: [] }),
    );
    const p = client(peer.url);
    await expect(p.c.request.page({ zone: 'z', url: SEARCH })).resolves.toMatchObject({ payload: { organic: [] } });
    expect(p.retries[0]!.reason).toMatch(/^502 peer_30002: a proxy peer failed/);

    const cert = await scripted((_req, res) =>
      send(res, 200, '', {
        'x-brd-status-code': '502',
        'x-brd-error-code': 'net_err_cert_date_invalid',
        'x-brd-error': 'net::ERR_CERT_DATE_INVALID',
      }),
    );
    const k = client(cert.url);
    const err = (await k.c.request.page({ zone: 'z', url: SEARCH }).catch((x: unknown) => x)) as ServiceError;
    expect(err).toMatchObject({ status: 502, code: 'net_err_cert_date_invalid', transient: false });
    expect(err.serviceMessage).toMatch(/^net_err_cert_date_invalid: the target's TLS certificate was refused/);
    expect(cert.hits).toHaveLength(1);
  });

  it('a status in x-brd-status-code without an error of the service’s is the target’s: a failure, not a page', async () => {
    const s = await scripted((_req, res) => send(res, 200, '<html>gone</html>', { 'x-brd-status-code': '404' }));
    const { c } = client(s.url);
    await expect(c.request.page({ zone: 'z', url: SEARCH })).rejects.toMatchObject({
      status: 404,
      serviceMessage: 'the target answered 404',
      transient: false,
    });
  });
});
