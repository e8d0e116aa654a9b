/**
 * Fault injection: which requests get a fault, decided deterministically from (seed, rule, route, the route's
 * request counter), so a test that replays the same requests sees the same faults.
 *
 * Kinds and when they strike, which matters for paid routes (filter, trigger, zone create…):
 * - before the handler runs (the job was NOT started): `429`, `429_retry_after`, `500`, `502`, `503`,
 *   `reset_before` (connection dropped without an answer), `latency` (a one-off delay of `spike_ms`);
 * - after the handler ran (the job WAS started): `reset_after` (connection dropped before any byte of the
 *   answer), `reset` (headers and part of the body, then the connection is dropped), `slow_body` (the body
 *   trickles, bounded by `slow_total_ms`), `truncated_gzip` (gzip streams only: the body ends cleanly before the
 *   gzip trailer; on any other response the fault does not apply and is not counted), `truncated_json` (JSON
 *   answers only: the body ends cleanly at half its length, without a Content-Length to contradict it, as a proxy
 *   cutting the answer short may deliver it; not applied, not counted, elsewhere).
 * - applied by the route itself, which knows what the request asked for (`ROUTE_KINDS`): `not_ready` (a snapshot
 *   download answers 202 "Snapshot is building" with a Retry-After although the status said ready) and
 *   `page_repeat` (a search page asked for at `start` > 0 answers the query's first page instead), `no_peers` (a
 *   `POST /request` fails with the service's `no_peers` code: no proxy peer for the request, not billed),
 *   `sr_rate_limit` (the service throttles the request's zone for `throttle_s` emulated seconds: every `POST
 *   /request` through it meanwhile is answered as the service answers a throttled zone — HTTP 200, the real status
 *   429 and the code in headers, not billed — each answer counted). A route counts such a fault only when it applies
 *   (a `page_repeat` on a first page, or on a review page, changes nothing).
 * `latency_ms` on a rule delays every matching request (a baseline, not counted as a fault).
 */
import { readFileSync } from 'node:fs';
import { LineCounter, parseDocument } from 'yaml';
import { z } from 'zod';
import { ConfigError, SluiceError } from '../core/errors.js';
import type { Stats } from './context.js';
import { serpRng } from './data/serp-rng.js';

/** Kinds answered before the route's handler runs: the operation is not started. */
const PRE_HANDLER = ['429', '429_retry_after', '500', '502', '503', 'reset_before', 'latency'] as const;
/** Kinds applied while the answer's body is sent (fault-delivery.ts). */
const BODY = ['reset', 'reset_after', 'slow_body', 'truncated_gzip', 'truncated_json'] as const;
/** Kinds the route applies itself (the server hands them to the handler as `EmuRequest.fault`). */
const ROUTE = ['not_ready', 'page_repeat', 'no_peers', 'sr_rate_limit'] as const;

export const FAULT_KINDS = [...PRE_HANDLER, ...BODY, ...ROUTE] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

export const ROUTE_KINDS: ReadonlySet<FaultKind> = new Set(ROUTE);
export const PRE_HANDLER_KINDS: ReadonlySet<FaultKind> = new Set(PRE_HANDLER);

export const faultRuleSchema = z.strictObject({
  /** `METHOD pattern` as registered (`POST /request`), or a glob on the path (`GET /datasets/snapshots/*\/download`); method `*` = any. */
  route: z.string().min(1),
  /** Probability that a matching request gets a fault. */
  rate: z.number().min(0).max(1).default(0),
  /** Relative weights of the kinds. */
  faults: z.partialRecord(z.enum(FAULT_KINDS), z.number().nonnegative()).default({}),
  /** Added to every matching request (real milliseconds). */
  latency_ms: z.number().int().nonnegative().default(0),
  /** Delay of the `latency` kind. */
  spike_ms: z.number().int().nonnegative().max(10_000).default(500),
  /** `Retry-After` seconds of the `429_retry_after` and `not_ready` kinds. */
  retry_after_s: z.number().int().nonnegative().default(1),
  /** Emulated seconds a zone struck by `sr_rate_limit` stays throttled. */
  throttle_s: z.number().positive().max(3600).default(10),
  /** Most faults this rule injects per route (latency_ms excluded). */
  max_per_route: z.number().int().nonnegative().optional(),
  /** Total delay a `slow_body` may add. */
  slow_total_ms: z.number().int().nonnegative().max(2_000).default(1_000),
  /** Bytes of body a `reset` lets through on a stream before dropping the connection. */
  reset_after_bytes: z.number().int().positive().default(16_384),
});

export const faultConfigSchema = z.strictObject({
  /** Defaults to the emulator's seed. */
  seed: z.number().int().optional(),
  rules: z.array(faultRuleSchema).default([]),
});

export type FaultRule = z.output<typeof faultRuleSchema>;
export type FaultConfig = z.output<typeof faultConfigSchema>;

/** Validates an already-parsed config object (e.g. passed to `startEmulator`). */
export function parseFaultConfig(value: unknown, source = 'faults'): FaultConfig {
  const parsed = faultConfigSchema.safeParse(value ?? {});
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  throw new SluiceError(`${source}: ${describeIssue(issue)}`, { hint: FORMAT_HINT });
}

/** Reads and validates a fault YAML file; errors name the file, line, key and what is allowed. */
export function loadFaultsFile(file: string): FaultConfig {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new SluiceError(`cannot read faults file ${file}: ${(err as Error).message}`, {
      hint: 'pass the path of an existing YAML file to --faults',
      cause: err,
    });
  }
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines });
  const yamlError = doc.errors[0];
  if (yamlError) {
    const [line, col] = yamlError.linePos?.[0] ? [yamlError.linePos[0].line, yamlError.linePos[0].col] : [1, 1];
    throw new ConfigError(file, line, col, `invalid YAML: ${yamlError.message.split('\n')[0]}`, FORMAT_HINT);
  }
  const parsed = faultConfigSchema.safeParse(doc.toJS() ?? {});
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  let offset = 0;
  // The innermost node that exists: an unknown key's issue path stops at its parent object.
  for (let n = issue?.path.length ?? 0; n >= 0; n--) {
    const node = doc.getIn(issue?.path.slice(0, n) ?? [], true) as { range?: [number, number, number] } | undefined;
    if (node?.range) {
      offset = node.range[0];
      break;
    }
  }
  const pos = lines.linePos(offset);
  throw new ConfigError(file, pos.line, pos.col, describeIssue(issue), FORMAT_HINT);
}

const FORMAT_HINT =
  'a faults file is `seed: <int>` (optional) and `rules: [{route: "POST /request", rate: 0.1, faults: {"429": 1, ...}}]`; ' +
  `fault kinds: ${FAULT_KINDS.join(', ')}`;

function describeIssue(issue: z.core.$ZodIssue | undefined): string {
  if (!issue) return 'invalid fault configuration';
  const key = issue.path.length ? issue.path.join('.') : '(top level)';
  if (issue.code === 'unrecognized_keys') {
    const allowed =
      issue.path.length === 0
        ? 'seed, rules'
        : issue.path[issue.path.length - 1] === 'faults'
          ? `fault kinds ${FAULT_KINDS.join(', ')}`
          : Object.keys(faultRuleSchema.shape).join(', ');
    return `${key}: unknown key(s) ${issue.keys.join(', ')}; allowed: ${allowed}`;
  }
  if (issue.code === 'invalid_key' || issue.code === 'invalid_value')
    return `${key}: ${issue.message}; allowed fault kinds: ${FAULT_KINDS.join(', ')}`;
  return `${key}: ${issue.message}`;
}

/** What the server does to one request. */
export interface FaultDecision {
  /** Baseline delay before the handler (the rule's `latency_ms`). */
  latencyMs: number;
  kind?: FaultKind;
  rule?: FaultRule;
}

export class FaultInjector {
  private readonly seed: number;
  /** `<rule index> <METHOD pattern>` → requests seen, faults injected. */
  private readonly seen = new Map<string, number>();
  private readonly injected = new Map<string, number>();
  private readonly matchers: ((method: string, pattern: string, path: string) => boolean)[];

  constructor(
    readonly config: FaultConfig,
    defaultSeed: number,
    private readonly stats: Stats,
  ) {
    this.seed = config.seed ?? defaultSeed;
    this.matchers = config.rules.map((r) => routeMatcher(r.route));
  }

  /** The first matching rule decides; the counter advances for every matching request. */
  decide(method: string, pattern: string, path: string): FaultDecision {
    const index = this.matchers.findIndex((m) => m(method, pattern, path));
    const rule = this.config.rules[index];
    if (!rule) return { latencyMs: 0 };
    const key = `${index} ${method} ${pattern}`;
    const n = this.seen.get(key) ?? 0;
    this.seen.set(key, n + 1);
    const rng = serpRng(this.seed, 'faults', index, method, pattern, n);
    const roll = rng.next();
    const pick = rng.next();
    const used = this.injected.get(key) ?? 0;
    if (roll >= rule.rate || (rule.max_per_route !== undefined && used >= rule.max_per_route))
      return { latencyMs: rule.latency_ms, rule };
    const kind = pickWeighted(rule.faults, pick);
    if (!kind) return { latencyMs: rule.latency_ms, rule };
    this.injected.set(key, used + 1);
    return { latencyMs: rule.latency_ms, kind, rule };
  }

  count(kind: FaultKind): void {
    this.stats.countFault(kind);
  }
}

function pickWeighted(weights: Partial<Record<FaultKind, number>>, u: number): FaultKind | undefined {
  // FAULT_KINDS order, not object key order, so the choice does not depend on how the YAML was written.
  const entries = FAULT_KINDS.map((k) => [k, weights[k] ?? 0] as const).filter(([, w]) => w > 0);
  const total = entries.reduce((s, [, w]) => s + w, 0);
  if (total <= 0) return undefined;
  let x = u * total;
  for (const [k, w] of entries) {
    if (x < w) return k;
    x -= w;
  }
  return entries[entries.length - 1]?.[0];
}

/** `METHOD pattern`: equal to the registered pattern, or a glob on the path (`*` one segment, `**` any). */
export function routeMatcher(route: string): (method: string, pattern: string, path: string) => boolean {
  const trimmed = route.trim();
  const space = trimmed.search(/\s/);
  const method = space < 0 ? '*' : trimmed.slice(0, space).toUpperCase();
  const glob = space < 0 ? trimmed : trimmed.slice(space).trim();
  const source = glob
    .split('**')
    .map((part) =>
      part
        .split('*')
        .map((s) => s.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
        .join('[^/]*'),
    )
    .join('.*');
  const regex = new RegExp(`^${source}/?$`);
  return (m, pattern, path) => (method === '*' || method === m) && (glob === pattern || regex.test(path));
}
