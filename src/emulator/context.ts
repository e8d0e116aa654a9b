/**
 * What every emulator route module gets: options, the scalable clock, the counters tests read, and the state that
 * survives a restart.
 */
import { z } from 'zod';
import type { DatasetBehaviour } from './datasets/behaviour.js';
import type { PersistedState } from './persisted-state.js';
import type { DataOptions } from './state-file.js';

export interface EmulatorOptions {
  /** 0 picks a free port. */
  port: number;
  host: string;
  /** Seeds all generated data and fault decisions. */
  seed: number;
  /** Records per dataset. */
  size: number;
  apiKey: string;
  /** >1 makes emulated time run faster (a 5-minute job limit passes in 5/timeScale minutes). */
  timeScale: number;
  /**
   * Emulated epoch ms the clock starts at. Setting it (or moving the clock through `POST /_emulator/clock`) pins the
   * clock to the emulated calendar: new dataset records and new reviews then appear as it passes their creation
   * time (see datasets/growth.ts). Undefined: the clock follows the machine's and the data never grows.
   */
  now?: number;
  /** Fault-injection config (see faults.ts); undefined = no faults. */
  faults?: unknown;
  /**
   * 429 answers to one IP within five emulated minutes that block it on every call (ip-block.ts). Default 25, as the
   * service; 0 counts them but never blocks.
   */
  ipBlockAfter?: number;
  /**
   * Deep lookup: add an `enrichments: [{column_name, status}]` field to `GET /request/{id}` (the service documents
   * none: by default an enrichment shows only as its column's values filling in).
   */
  enrichmentStatus?: boolean;
  /**
   * How review pages answer `start` (docs/service.md §5.4): `dated` (default) pages by `start` before the vendor
   * deprecated `start` for maps (2025-12-15 on the emulated clock) and answers the place's first page for every
   * `start` from then on; `start` always pages; `repeat` always answers the first page.
   */
  reviewPaging?: 'dated' | 'start' | 'repeat';
  /** Added to every response, in real milliseconds (crawl benchmarks use 100). */
  latencyMs: number;
  /**
   * Records a filter job scans per emulated minute (default 1,000,000): a job's emulated duration is the records it
   * scanned at this rate plus `jobSchedulingMs`. Lower it to make jobs hit the service's 5-minute limit.
   */
  jobRecordsPerMinute?: number;
  /** Emulated milliseconds a filter job spends `scheduled` before it starts building (default 4,000). */
  jobSchedulingMs?: number;
  /**
   * Where the ids a client may come back for (snapshots, deep-lookup requests, zones…) and the paid counters are
   * kept, so another emulator started with the same file knows them. Undefined: nothing outlives the process.
   */
  stateFile?: string;
  /** The dataset endpoints' switches away from the real service's behaviour (datasets/behaviour.ts); unset: real. */
  datasets?: Partial<DatasetBehaviour>;
}

export const defaultEmulatorOptions: EmulatorOptions = {
  port: 0,
  host: '127.0.0.1',
  seed: 1,
  size: 10_000,
  apiKey: 'emulator-key',
  timeScale: 1,
  latencyMs: 0,
  jobRecordsPerMinute: 1_000_000,
  jobSchedulingMs: 4_000,
};

/**
 * A clock's reference point: at real epoch ms `real`, emulated time was `emulated`. `pinned`: the clock was set to
 * an emulated date (`now`, `POST /_emulator/clock`), under which the data grows.
 */
export const clockAnchorSchema = z.object({
  real: z.number(),
  emulated: z.number(),
  timeScale: z.number(),
  pinned: z.boolean().optional(),
});
export type ClockAnchor = z.infer<typeof clockAnchorSchema>;

/** Emulated time: real elapsed time since the anchor, multiplied by the time scale. */
export class Clock {
  private current: ClockAnchor;
  /**
   * `continueFrom`: a saved clock. Emulated time went on while no emulator ran (a service's jobs do not pause), at
   * the saved scale; from now on it runs at this clock's scale. `startAt` (the `now` option) overrides both.
   */
  constructor(
    readonly timeScale: number,
    continueFrom?: ClockAnchor,
    startAt?: number,
  ) {
    const real = Date.now();
    if (startAt !== undefined) this.current = { real, emulated: startAt, timeScale, pinned: true };
    else if (continueFrom === undefined) this.current = { real, emulated: real, timeScale };
    else if (continueFrom.timeScale === timeScale) this.current = continueFrom;
    else
      this.current = {
        real,
        emulated: continueFrom.emulated + (real - continueFrom.real) * continueFrom.timeScale,
        timeScale,
        ...(continueFrom.pinned === true && { pinned: true }),
      };
  }
  get anchor(): ClockAnchor {
    return this.current;
  }
  /** True once the clock was set to an emulated date: the data then grows with it. */
  get pinned(): boolean {
    return this.current.pinned === true;
  }
  /** Emulated epoch milliseconds. */
  now(): number {
    return this.current.emulated + (Date.now() - this.current.real) * this.timeScale;
  }
  /**
   * Moves emulated time to `emulatedMs` (forwards or back) and pins the clock. Jobs keep their creation times, so a
   * job moved past its duration is ready at once.
   */
  set(emulatedMs: number): void {
    this.current = { real: Date.now(), emulated: emulatedMs, timeScale: this.timeScale, pinned: true };
  }
  /** Real milliseconds that correspond to `emulatedMs` of emulated time. */
  real(emulatedMs: number): number {
    return emulatedMs / this.timeScale;
  }
}

/** Counters readable by tests at `GET /_emulator/stats` and through the in-process handle. */
export class Stats {
  /** `METHOD pattern` → requests received (after auth). */
  readonly routes: Record<string, number> = {};
  /**
   * Paid or account-changing operations actually started: filter, trigger, enrich, zone_create, ip_refresh,
   * domain_perm. With `stateFile` they are the account's, counted over every instance that used the file.
   */
  readonly paid: Record<string, number> = {};
  /** Faults injected, by kind. */
  readonly faults: Record<string, number> = {};
  /**
   * Records the account was charged for (a filter job's snapshot, once it is ready). Like `paid`, the account's:
   * carried over through the state file.
   */
  recordsCharged = 0;
  /**
   * Crawl requests billed: pages the service answered. Refusals — a throttled zone, a 5xx fault, `no_peers`,
   * `unexpected_q`, a target's error — are not billed (docs/service.md §5.6), though they reach the route.
   */
  billedRequests = 0;
  /** Crawl requests billed by earlier instances sharing the state file (`requests` goes on from there). */
  requestsBefore = 0;
  inFlight = 0;
  maxInFlight = 0;
  /** In-flight per route pattern, and its maximum (crawl tests assert `POST /request`). */
  readonly routeInFlight: Record<string, number> = {};
  readonly routeMaxInFlight: Record<string, number> = {};

  /**
   * Counts carried over from the state file: `paid` is the account's, like a bill, so a test can prove across
   * restarts that a paid job was started once. The other counters describe this process's traffic.
   */
  restorePaid(saved: Record<string, number>): void {
    Object.assign(this.paid, saved);
  }
  countPaid(kind: string): void {
    this.paid[kind] = (this.paid[kind] ?? 0) + 1;
  }
  billRequest(): void {
    this.billedRequests++;
  }
  chargeRecords(n: number): void {
    this.recordsCharged += n;
  }
  countFault(kind: string): void {
    this.faults[kind] = (this.faults[kind] ?? 0) + 1;
  }
  enter(route: string): void {
    this.routes[route] = (this.routes[route] ?? 0) + 1;
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    const n = (this.routeInFlight[route] ?? 0) + 1;
    this.routeInFlight[route] = n;
    this.routeMaxInFlight[route] = Math.max(this.routeMaxInFlight[route] ?? 0, n);
  }
  leave(route: string): void {
    this.inFlight--;
    this.routeInFlight[route] = (this.routeInFlight[route] ?? 1) - 1;
  }
  reset(): void {
    for (const o of [this.routes, this.paid, this.faults, this.routeInFlight, this.routeMaxInFlight])
      for (const k of Object.keys(o)) delete o[k];
    this.maxInFlight = this.inFlight;
    this.recordsCharged = 0;
    this.billedRequests = 0;
    this.requestsBefore = 0;
  }
  /** What the account paid for: paid operations, crawl requests billed (pages answered) and records charged. */
  counters(): { paid: Record<string, number>; requests: number; paid_calls: number; records_charged: number } {
    const requests = this.requestsBefore + this.billedRequests;
    const operations = Object.values(this.paid).reduce((a, b) => a + b, 0);
    return {
      paid: { ...this.paid },
      requests,
      paid_calls: operations + requests,
      records_charged: this.recordsCharged,
    };
  }
  toJSON(): unknown {
    return {
      routes: this.routes,
      paid: this.paid,
      faults: this.faults,
      inFlight: this.inFlight,
      maxInFlight: this.maxInFlight,
      recordsCharged: this.recordsCharged,
      routeMaxInFlight: this.routeMaxInFlight,
    };
  }
}

export interface EmulatorContext {
  options: EmulatorOptions;
  clock: Clock;
  stats: Stats;
  /** Aborted when the server closes: background work (filter job scans) stops with it. */
  closed: AbortSignal;
  /** Sections that outlive the process with `stateFile`; commit before answering with a new id. */
  state: PersistedState;
}

/** The options a state file must have been written with (see state-file.ts). */
export function dataOptionsOf(o: EmulatorOptions): DataOptions {
  return {
    seed: o.seed,
    size: o.size,
    jobRecordsPerMinute: o.jobRecordsPerMinute ?? 1_000_000,
    jobSchedulingMs: o.jobSchedulingMs ?? 4_000,
  };
}
