/**
 * What the service's own error codes mean to whoever runs sluice (docs/service.md §5.6): the codes of `x-brd-err-code`
 * (proxy level: `client_*`, `policy_*`, `peer_*`, `target_*`) and `x-brd-error-code` (the page fetcher's: `premium`,
 * `sr_rate_limit`, `no_peers`, …). A code leads the message of the error it came with (it is what the user looks up),
 * and brings a fix that fits it — never the API key's, which only a 401 (or a 407 of the `client_100xx` family) is
 * about.
 *
 * A code may also say whether asking again can help where its status says otherwise: `no_peers` and `unexpected_q`
 * come with a 502 but fail the same way every time; a refused certificate or a policy refusal is as final.
 */

/** What the call knows that a code's fix names: the zone the request went through. */
export interface CodeContext {
  zone?: string | undefined;
}

export interface CodeAdvice {
  /** Sluice's own sentence about what the code means here; it follows the code in the message, before the service's words. */
  says?: string;
  hint: string;
  /** Set where the code, not the status, decides whether asking again can help. */
  transient?: boolean;
}

/** Zone types that serve search and review pages through `POST /request` (docs/service.md §7.1, §8). */
export const SEARCH_ZONE_TYPES: readonly string[] = ['serp', 'unblocker'];

const RETRIED =
  'sluice asks again by itself (each request goes through another peer); if the run still fails, run it again later ' +
  '(committed work is kept; failed requests are not billed)';
const RATE =
  'sluice slows down and waits it out by itself, within its 429 budget; if the run stops at that budget, run it again ' +
  'later with a lower source.concurrency or a source.rate_limit';

const zoneName = (ctx: CodeContext): string => (ctx.zone !== undefined ? `zone "${ctx.zone}"` : 'the zone');

/** Codes with a meaning of their own. */
const CODES: Readonly<Record<string, (ctx: CodeContext) => CodeAdvice>> = {
  client_10090: (ctx) => ({
    says: `${zoneName(ctx)} cannot fetch pages through /request: it must be a zone of type ${SEARCH_ZONE_TYPES.join(' or ')}`,
    hint:
      `set source.zone to a zone of type ${SEARCH_ZONE_TYPES.join(' or ')} (\`sluice zones active\` lists the account's ` +
      'zones with their types; `sluice zones create <name> --yes` makes one of type serp); a browser_api zone serves ' +
      'the browser API only',
    transient: false,
  }),
  client_10110: () => ({
    says: "the account's request rate is over its limit (trial accounts: 100 requests a minute across products)",
    hint: RATE,
  }),
  no_peers: (ctx) => ({
    hint:
      `the service has no peers for this request (${zoneName(ctx)} has none in the country or targeting asked for): ` +
      "change the zone's country or targeting, or use another zone; the request was not billed",
    transient: false,
  }),
  unexpected_q: () => ({
    hint:
      'the search engine cut the query short (its detected_query differs from the query): shorten the query (at ' +
      'most 32 words) or remove it; the request was not billed',
    transient: false,
  }),
  premium: (ctx) => ({
    says: 'the target is a premium domain',
    hint: `enable premium domains in the settings of ${zoneName(ctx)}, or leave this target out`,
  }),
  feature_not_active: (ctx) => ({
    says: `the request asks for a feature ${zoneName(ctx)} does not have active`,
    hint: `activate the feature in the settings of ${zoneName(ctx)}, or leave it out of the request`,
  }),
  ub_bad_endpoint_robots: () => ({
    says: "the target's robots.txt forbids this page to the service",
    hint: 'the page cannot be fetched through the service; leave it out',
  }),
  sr_rate_limit: (ctx) => ({
    says: `the service throttles ${zoneName(ctx)} for a low success rate`,
    hint: RATE,
  }),
  rate_limit: () => ({ hint: RATE }),
  bucket_rate_limit: () => ({ hint: RATE }),
  failed_query_rejected: () => ({ says: 'the service blocks this query for 15 s', hint: RATE }),
  repeat_query_rejected: () => ({ says: 'the service blocks this repeated query for 15 s', hint: RATE }),
  http_status: () => ({
    hint: 'the target answered with an error status: the page may not exist, or the target refused it; check the target URL, or run again later',
  }),
};

/** Families of codes, by prefix: what every code of the family means, unless it has a meaning of its own. */
const FAMILIES: readonly [RegExp, (code: string, ctx: CodeContext) => CodeAdvice][] = [
  [
    /^client_100[0-1]\d$/,
    (_code, ctx) => ({
      says: `the service did not authenticate the request for ${zoneName(ctx)}`,
      hint:
        `check that ${zoneName(ctx)} exists and is active in the account the API key belongs to ` +
        '(`sluice zones active`), then run again',
      transient: false,
    }),
  ],
  [
    /^client_/,
    (code, ctx) => ({
      hint: `the service refuses the request's settings (${code}): check the settings of ${zoneName(ctx)} (its type, targeting and permissions) against what the pipeline asks for`,
    }),
  ],
  [
    /^policy_/,
    (code) => ({
      says: "the service's usage policy refuses this request",
      hint: `asking again will not help: access under ${code} is the vendor's compliance team's to grant (compliance@brightdata.com)`,
      transient: false,
    }),
  ],
  [/^peer_/, () => ({ says: 'a proxy peer failed', hint: RETRIED, transient: true })],
  [
    /^target_/,
    () => ({
      says: 'the target site failed or refused the connection',
      hint: 'run again later; if it keeps failing, the target may not be reachable through the service',
    }),
  ],
  [
    /cert/,
    () => ({
      says: "the target's TLS certificate was refused",
      hint: 'the page cannot be fetched while the target serves that certificate; asking again does not help',
      transient: false,
    }),
  ],
  [
    /^(reject_block|resolve_failed|net_err|proxy_error|navigation_timeout|domcontentloaded_event_timeout|document_load_failed|expect_element)/,
    () => ({ says: 'the service failed to fetch the page', hint: RETRIED }),
  ],
];

/** The advice for `code`, or undefined for a code sluice does not know (its status then decides). */
export function adviceFor(code: string, ctx: CodeContext = {}): CodeAdvice | undefined {
  const own = CODES[code];
  if (own) return own(ctx);
  for (const [pattern, advice] of FAMILIES) if (pattern.test(code)) return advice(code, ctx);
  return undefined;
}

/** `<code>: <sluice's sentence> (the service: <its words>)`, or `<code>: <its words>`: the code first, once. */
export function codeLedMessage(code: string, serviceMessage: string, says: string | undefined): string {
  const own = serviceMessage.startsWith(code)
    ? serviceMessage.slice(code.length).replace(/^[\s:]+/, '')
    : serviceMessage;
  if (says === undefined) return own === '' ? code : `${code}: ${own}`;
  return own === '' || own === `service error ${code}` ? `${code}: ${says}` : `${code}: ${says} (the service: ${own})`;
}
