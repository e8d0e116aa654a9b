/**
 * The PRNG of dataset records. Like `serpRng`, every value derives from a key, never from call order — but the key
 * is integers (seed, stream, record index), hashed without building a string, because a snapshot generates a
 * million records and the per-record cost must stay in the microseconds.
 */

/** Streams keep one record's sub-parts (e.g. its updates) independent of the others. */
export function recordRng(seed: number, stream: number, index: number): RecordRng {
  return new RecordRng(mix3(seed, stream, index));
}

export function mix3(a: number, b: number, c: number): number {
  let h = Math.imul(a ^ 0x9e3779b9, 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13) ^ b, 0xc2b2ae35);
  h = Math.imul(h ^ (h >>> 16) ^ c, 0x27d4eb2d);
  h ^= h >>> 15;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  return h >>> 0;
}

/** mulberry32 with helpers; a class so the hot calls stay monomorphic. */
export class RecordRng {
  private state: number;
  constructor(state: number) {
    this.state = state || 0x9e3779b9;
  }

  /** Uniform in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) | 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** Integer in [min, max], both inclusive. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)] as T;
  }

  bool(p = 0.5): boolean {
    return this.next() < p;
  }

  /** Picks by cumulative weights (`cum` ascending, last = total). */
  weighted<T>(items: readonly T[], cum: readonly number[]): T {
    const x = this.next() * (cum[cum.length - 1] as number);
    let i = 0;
    while (i < cum.length - 1 && x >= (cum[i] as number)) i++;
    return items[i] as T;
  }

  /** Heavy-tailed integer: 10^u for u uniform in [lo, hi] (follower counts, applicant counts). */
  logInt(lo: number, hi: number): number {
    return Math.floor(10 ** (lo + this.next() * (hi - lo)));
  }

  /** `n` characters of [0-9a-z]. */
  alnum(n: number): string {
    let out = '';
    for (let i = 0; i < n; i++) out += ALNUM[Math.floor(this.next() * 36)];
    return out;
  }

  /** `n` characters of [A-Za-z0-9_-] (media keys, opaque ids). */
  token(n: number): string {
    let out = '';
    for (let i = 0; i < n; i++) out += TOKEN[Math.floor(this.next() * 64)];
    return out;
  }
}

const ALNUM = '0123456789abcdefghijklmnopqrstuvwxyz';
const TOKEN = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-';

/** Cumulative sums of weights, for `RecordRng.weighted`. */
export function cumulative(weights: readonly number[]): number[] {
  let s = 0;
  return weights.map((w) => (s += w));
}

/**
 * A bijection on [0, 2^24): distinct record indices get distinct, random-looking numeric ids (company ids, job
 * ids) without a lookup table. Indices past 2^24 map above that range, still distinct.
 */
export function permute24(index: number, seed: number): number {
  if (index >= 0x1000000) return index + 0x1000000;
  let x = (index ^ (seed & 0xffffff)) & 0xffffff;
  for (let round = 0; round < 3; round++) {
    x = Math.imul(x, 0x9e3779 | 1) & 0xffffff; // odd multiplier: invertible mod 2^24
    x ^= x >>> 11;
    x = (x + 0x5bd1e9) & 0xffffff;
  }
  return x;
}
