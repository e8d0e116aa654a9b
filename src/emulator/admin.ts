/**
 * The emulator's own endpoints under `/_emulator/` (no auth: they are for tests and operators, not the service's
 * API): counters, the emulated clock, IP blocks. Apart from the request path (server.ts) because none of them goes
 * through the service's auth, faults or latency.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { z } from 'zod';
import type { EmulatorContext } from './context.js';
import type { IpBlock } from './ip-block.js';
import { plain, readBody } from './responder.js';

/**
 * The admin endpoints (no auth, like `/_emulator/stats`): `GET /_emulator/counters` (what the account paid for) and
 * `GET`/`POST /_emulator/clock` (`{"now": ISO}` or `{"advance": "1d"}`), which let one emulator play many nights.
 */
export async function admin(
  ctx: EmulatorContext,
  method: string,
  pathname: string,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const reply = (status: number, body: unknown): void => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  if (pathname === '/_emulator/counters') {
    if (method !== 'GET') return plain(res, 405, 'Method not allowed');
    return reply(200, ctx.stats.counters());
  }
  const clockState = () => ({ now: new Date(ctx.clock.now()).toISOString(), pinned: ctx.clock.pinned });
  if (method === 'GET') return reply(200, clockState());
  if (method !== 'POST') return plain(res, 405, 'Method not allowed');
  let target: number;
  try {
    target = clockTarget(JSON.parse((await readBody(req)).toString('utf8') || '{}'), ctx.clock.now());
  } catch (err) {
    return reply(400, { error: (err as Error).message });
  }
  ctx.clock.set(target);
  await ctx.state.commit(); // a restarted emulator goes on from the moved clock
  reply(200, clockState());
}

/** `GET`: the 429 counts per IP; `DELETE`: support clears every block (and the counts). */
export function ipBlockAdmin(ctx: EmulatorContext, ipBlock: IpBlock, method: string, res: ServerResponse): void {
  if (method === 'DELETE') ipBlock.clear();
  else if (method !== 'GET') return plain(res, 405, 'Method not allowed');
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify(ipBlock.view(ctx.clock.now())));
}

const clockBodySchema = z.union([
  z.object({ now: z.iso.datetime({ offset: true }) }).strict(),
  z.object({ advance: z.string().regex(/^\d+(ms|s|m|h|d)$/) }).strict(),
]);
const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** The emulated time a clock request asks for. */
export function clockTarget(body: unknown, now: number): number {
  const parsed = clockBodySchema.safeParse(body);
  if (!parsed.success) throw new Error('send {"now": "2025-03-01T02:00:00Z"} or {"advance": "1d"} (ms, s, m, h, d)');
  if ('now' in parsed.data) return Date.parse(parsed.data.now);
  const m = /^(\d+)(ms|s|m|h|d)$/.exec(parsed.data.advance)!;
  return now + Number(m[1]) * UNIT_MS[m[2]!]!;
}
