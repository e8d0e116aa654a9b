/**
 * A small seeded PRNG for the request-interface data (SERP, reviews, zones) and fault decisions. Every value
 * derives from a key (seed + parts), never from call order across requests, so any page can be generated alone
 * and in any order.
 */

export interface SerpRng {
  /** Uniform in [0, 1). */
  next(): number;
  /** Integer in [min, max], both inclusive. */
  int(min: number, max: number): number;
  pick<T>(items: readonly T[]): T;
  /** True with probability `p`. */
  bool(p?: number): boolean;
  /** `n` lowercase hex digits. */
  hex(n: number): string;
}

/** FNV-1a over the text, then a murmur-style finaliser: a well-mixed 32-bit hash. */
export function hash32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** A generator keyed by its parts (`serpRng(seed, 'serp', host, query)`). */
export function serpRng(...parts: (string | number)[]): SerpRng {
  let state = hash32(parts.map(String).join('\u241f')) || 0x9e3779b9;
  // mulberry32
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (min, max) => min + Math.floor(next() * (max - min + 1)),
    pick: <T>(items: readonly T[]): T => {
      if (items.length === 0) throw new Error('pick from an empty list');
      return items[Math.floor(next() * items.length)] as T;
    },
    bool: (p = 0.5) => next() < p,
    hex: (n) => {
      let out = '';
      while (out.length < n)
        out += Math.floor(next() * 0x10000)
          .toString(16)
          .padStart(4, '0');
      return out.slice(0, n);
    },
  };
}
