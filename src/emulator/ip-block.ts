/**
 * The service's IP block (docs/service.md §6): an IP that gets 25 answers of 429 within five minutes is refused on
 * every API call until the vendor's support clears it. The emulator counts its own 429 answers per client IP over a
 * sliding five-minute window of emulated time (a faster clock forgets faster, as the service's own would), blocks
 * at the threshold, and answers a blocked IP's every call as the block does: 403 `Access denied.`, the body of any
 * policy refusal — nothing in it tells a block from a key without permission, which is what users see.
 *
 * `GET /_emulator/ip-block` shows the counts (`max_in_window` is the most 429s any five-minute window held, what a
 * test asserts); `DELETE /_emulator/ip-block` is support clearing every block and count.
 */

export const BLOCK_AFTER = 25;
export const BLOCK_WINDOW_MS = 5 * 60_000;
export const BLOCKED_STATUS = 403;
export const BLOCKED_BODY = 'Access denied.';

interface IpRecord {
  /** Emulated times of recent 429 answers. */
  recent: number[];
  maxInWindow: number;
  total: number;
  blocked: boolean;
}

export interface IpBlockView {
  block_after: number;
  window_ms: number;
  ips: Record<string, { in_window: number; max_in_window: number; total_429: number; blocked: boolean }>;
}

export class IpBlock {
  private readonly ips = new Map<string, IpRecord>();

  /** `after` 0 counts but never blocks (a test about something else may switch the block off). */
  constructor(
    private readonly after: number = BLOCK_AFTER,
    private readonly windowMs: number = BLOCK_WINDOW_MS,
  ) {}

  /** Counts a 429 answered to `ip` at emulated time `now`; blocks the IP when the window reaches the threshold. */
  note429(ip: string, now: number): void {
    let r = this.ips.get(ip);
    if (!r) this.ips.set(ip, (r = { recent: [], maxInWindow: 0, total: 0, blocked: false }));
    // The clock may be moved backwards between emulated nights: keep only what lies in (now - window, now].
    r.recent = r.recent.filter((t) => t > now - this.windowMs && t <= now);
    r.recent.push(now);
    r.total++;
    r.maxInWindow = Math.max(r.maxInWindow, r.recent.length);
    if (this.after > 0 && r.recent.length >= this.after) r.blocked = true;
  }

  blocked(ip: string): boolean {
    return this.ips.get(ip)?.blocked === true;
  }

  /** Support lifts every block and forgets the counts. */
  clear(): void {
    this.ips.clear();
  }

  view(now: number): IpBlockView {
    const ips: IpBlockView['ips'] = {};
    for (const [ip, r] of this.ips)
      ips[ip] = {
        in_window: r.recent.filter((t) => t > now - this.windowMs && t <= now).length,
        max_in_window: r.maxInWindow,
        total_429: r.total,
        blocked: r.blocked,
      };
    return { block_after: this.after, window_ms: this.windowMs, ips };
  }
}
