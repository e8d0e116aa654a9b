/** Parsers for option values; what they throw becomes a usage error naming the option. */

/** `--shard 2/8` → the third of eight deterministic shards. */
export function parseShard(text: string): { index: number; count: number } {
  const m = /^(\d+)\/(\d+)$/.exec(String(text).trim());
  const index = m ? Number(m[1]) : NaN;
  const count = m ? Number(m[2]) : NaN;
  if (!m || count < 1 || index >= count)
    throw new Error(`--shard must be i/n with 0 ≤ i < n, e.g. 0/4 (got "${text}")`);
  return { index, count };
}

export function positiveInt(name: string) {
  return (value: unknown): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a whole number ≥ 1 (got "${String(value)}")`);
    return n;
  };
}

/** A JSON value given on the command line. */
export function jsonArg(name: string) {
  return (text: unknown): unknown => {
    try {
      return JSON.parse(String(text));
    } catch (err) {
      throw new Error(`--${name} is not valid JSON: ${(err as Error).message}`);
    }
  };
}

/** Repeatable options may also be given comma- or space-separated: `--ips 1.1.1.1,2.2.2.2`. */
export function listArg(values: unknown): string[] {
  const list = Array.isArray(values) ? values : [values];
  return list.flatMap((v) => String(v).split(/[\s,]+/)).filter(Boolean);
}
