/**
 * The service's clock, as its answers tell it (the `Date` header every answer carries). Times sluice stores for a
 * later run to compare with its "now" — a page's `fetched_at`, SERP `refresh_after`, relative review dates — are
 * taken on this clock, so a machine whose clock is off cannot misdate rows, and an emulator whose clock is moved
 * (emulated nights) is followed like the real service.
 */

/** The time an answer's `Date` header states (whole seconds), or undefined when it is missing or unreadable. */
export function answerDate(headers: Record<string, string | string[] | undefined>): Date | undefined {
  const v = headers.date;
  const text = Array.isArray(v) ? v[0] : v;
  if (text === undefined) return undefined;
  const t = Date.parse(text);
  return Number.isNaN(t) ? undefined : new Date(t);
}

export class ServiceClock {
  /** Service time minus this machine's, from the latest answer. */
  private offsetMs: number | undefined;

  constructor(private readonly local: () => number = Date.now) {}

  /** Notes the `Date` of an answer that arrived just now. */
  observe(headers: Record<string, string | string[] | undefined>): void {
    const date = answerDate(headers);
    // The header is whole seconds: half a second is the best guess of where in that second the answer was made.
    if (date !== undefined) this.offsetMs = date.getTime() + 500 - this.local();
  }

  /** The service's time now, or undefined before its first dated answer. */
  now(): number | undefined {
    return this.offsetMs === undefined ? undefined : this.local() + this.offsetMs;
  }
}
