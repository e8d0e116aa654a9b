/**
 * The durable record of the pages a crawl discovered. They are kept in `ctx.state` as chains: for each query (or
 * fid) the list of page offsets found so far, in page order (`[0, 10, 20]`). A page's successor is written to the
 * chain before the page's `read` ends, so a crash after the page committed still knows the next page, and a
 * resumed run plans exactly the pages of every chain: committed ones are skipped by the engine, the rest fetched.
 * Once a successor is recorded it is kept, so a page read again (a unit retry, or a rerun) cannot fork the chain.
 */
import { failpoint } from '../../core/failpoints.js';
import type { StateStore } from '../../core/types.js';

/** Page offsets per chain key, in page order. */
export type Chains = Record<string, number[]>;

/** The durable chains of one crawl, under one state key. */
export class ChainStore {
  private chains: Chains;

  constructor(
    private readonly state: StateStore,
    private readonly key: string,
  ) {
    this.chains = { ...(state.get<Chains>(key) ?? {}) };
  }

  /** Offsets known for `chain`: at least the first page. */
  starts(chain: string): number[] {
    return this.chains[chain] ?? [0];
  }

  /** The recorded successor of `start`, if any. */
  nextOf(chain: string, start: number): number | undefined {
    const list = this.chains[chain];
    if (!list) return undefined;
    const i = list.indexOf(start);
    return i >= 0 ? list[i + 1] : undefined;
  }

  /** Record `next` after `start` unless a successor is recorded already; returns the successor in force. */
  async recordNext(chain: string, start: number, next: number): Promise<number> {
    const list = (this.chains[chain] ??= [0]);
    const i = list.indexOf(start);
    if (i < 0) return next; // a page outside the chain (not planned by us): nothing to extend
    const known = list[i + 1];
    if (known !== undefined) return known;
    list.push(next);
    await this.state.set(this.key, this.chains);
    failpoint('crawl:successor-recorded');
    return next;
  }
}
