/**
 * The jsonl sink's spools: staging files that units' lines are appended to as the units commit, and that are
 * published as they are — linked into place, not copied — once they hold the target size. Staged and then joined
 * into target-size files, every byte of the output was written twice; a spool is written once. A unit staged into a
 * spool is a range of it (the manifest's `staged.offset` and `bytes`, from the spool's start, in commit order).
 *
 * A spool is written by one unit at a time: the units staged at once each take their own, so a run has at most as
 * many spools as units staged at once; what they hold at its end is joined into one smaller file (sink.ts
 * `joinSmall`). Only bytes the
 * manifest names are ever published: a unit that fails or is not committed is cut off again, and a spool is cut to
 * its committed length before another unit adds to it (whatever a failed cut left) and before it is published.
 * Units staged in other files (an interrupted run's spools, or one file per unit by an earlier sluice) are published
 * by copying their ranges, as before.
 */
import { randomBytes } from 'node:crypto';

export interface Spool {
  /** Its name in the staging directory. */
  readonly name: string;
  /** Bytes the manifest's units hold of it: where the next unit's range starts. */
  size: number;
}

export class Spools {
  private readonly idle: Spool[] = [];
  private readonly filling = new Set<Spool>();

  /** A spool for one unit: the idle one that holds the most (it reaches the target first), or a new one. */
  take(): Spool {
    let best = -1;
    for (let i = 0; i < this.idle.length; i++) if (best < 0 || this.idle[i]!.size > this.idle[best]!.size) best = i;
    const spool = best >= 0 ? this.idle.splice(best, 1)[0]! : { name: spoolName(), size: 0 };
    this.filling.add(spool);
    return spool;
  }

  give(spool: Spool): void {
    if (this.filling.delete(spool)) this.idle.push(spool);
  }

  /** The idle spools holding at least `minBytes` (and something), taken out of the pool to be published. */
  takeFull(minBytes: number): Spool[] {
    const full = this.idle.filter((s) => s.size > 0 && s.size >= minBytes);
    for (const s of full) this.idle.splice(this.idle.indexOf(s), 1);
    return full;
  }

  /** Names of the spools still in the pool: units staged in them wait for their spool to fill. */
  names(): Set<string> {
    return new Set([...this.idle, ...this.filling].map((s) => s.name));
  }
}

/** No glob for data files (`*.jsonl*`) lists it. */
function spoolName(): string {
  return `spool-${randomBytes(6).toString('hex')}.staged`;
}
