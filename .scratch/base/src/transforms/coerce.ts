/**
 * Lenient readers for the service's loosely typed payload fields. Normalizers never throw on odd input: a value
 * that is absent or has the wrong shape becomes null, so one strange record cannot stop a crawl.
 */
import { isDateOnly, isTimestamp } from '../core/values.js';

/** Returned by converters that distinguish "absent" (null) from "present but not convertible". */
export const FAILED: unique symbol = Symbol('conversion failed');
export type Failed = typeof FAILED;

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

export function asObject(v: unknown): Record<string, unknown> | undefined {
  return isPlainObject(v) ? v : undefined;
}

/** Strings kept; numbers and booleans as their text; anything else null. */
export function toText(v: unknown): string | null {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  if (typeof v === 'boolean') return String(v);
  return null;
}

/** A finite number, or a string holding one (thousands commas allowed); else null. */
export function toNumber(v: unknown): number | null {
  if (typeof v === 'number') return Number.isFinite(v) ? v : null;
  if (typeof v !== 'string') return null;
  let s = v.trim();
  // Commas only as thousands separators: "1,234" yes, "1,2,3" no.
  if (/^[+-]?\d{1,3}(,\d{3})+(\.\d+)?$/.test(s)) s = s.replace(/,/g, '');
  if (!/^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(s)) return null;
  const n = Number(s);
  return Number.isFinite(n) ? n : null;
}

/** A safe integer (from a number with no fraction or an integer string); else null. */
export function toInteger(v: unknown): number | null {
  const n = toNumber(v);
  return n !== null && Number.isSafeInteger(n) ? n : null;
}

export function toBool(v: unknown): boolean | null {
  if (typeof v === 'boolean') return v;
  if (typeof v === 'string') {
    const s = v.trim().toLowerCase();
    if (s === 'true') return true;
    if (s === 'false') return false;
  }
  return null;
}

const SUFFIX: Record<string, number> = { k: 1e3, m: 1e6, b: 1e9 };

/**
 * A count as the service writes it: 1234, "1234", "1,234", "1.2K", "3M", "500+" → integer. null/"" → null;
 * anything else (text, negative, fractional without a suffix) → FAILED.
 */
export function parseCount(v: unknown): number | null | Failed {
  if (v === null || v === undefined) return null;
  if (typeof v === 'number') return Number.isSafeInteger(v) && v >= 0 ? v : FAILED;
  if (typeof v !== 'string') return FAILED;
  const s = v.trim().replace(/[,\s_]/g, '');
  if (s === '') return null;
  const m = /^(\d+(?:\.\d+)?)([kmb])?\+?$/i.exec(s);
  if (!m) return FAILED;
  const base = Number(m[1]);
  const n = m[2] ? Math.round(base * (SUFFIX[m[2].toLowerCase()] ?? 1)) : base;
  return Number.isSafeInteger(n) ? n : FAILED;
}

/** A list of texts; non-text elements dropped. Not an array → null. */
export function toTextList(v: unknown): string[] | null {
  if (!Array.isArray(v)) return null;
  const out: string[] = [];
  for (const e of v) {
    const t = toText(e);
    if (t !== null) out.push(t);
  }
  return out;
}

/** Image fields are often inline `data:` URIs (kilobytes of base64 per row): keep only real URLs. */
export function urlOrNull(v: unknown): string | null {
  return typeof v === 'string' && v !== '' && !v.startsWith('data:') ? v : null;
}

export function nonEmpty(v: unknown): boolean {
  return v !== null && v !== undefined && v !== '';
}

/** Reads `a.b.c` through nested objects; an own key spelled with dots wins over the path. */
export function getPath(row: Record<string, unknown>, path: string): unknown {
  if (path in row || !path.includes('.')) return row[path];
  let cur: unknown = row;
  for (const part of path.split('.')) {
    if (!isPlainObject(cur)) return undefined;
    cur = cur[part];
  }
  return cur;
}

/** A value as short text for error messages and `_raw_` columns. */
export function describeValue(v: unknown): string {
  if (typeof v === 'string') return v;
  if (isTimestamp(v)) return v.toISOString();
  if (isDateOnly(v)) return v.iso;
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}

/** A row as dead-letter `raw` text (the dead-letter file truncates it). */
export function rawRow(row: unknown): string {
  return describeValue(row);
}
