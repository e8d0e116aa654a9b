/**
 * `on_unstorable: repair`: a copy of a refused record with the names the store refuses renamed (`<name>_<hash>`,
 * shortened to fit) and, when it is too large, its longest texts cut. Apart from the judge (storable.ts) because it
 * runs only for refused records under that policy, never on the path every record takes; the judge checks the copy
 * again, so nothing here needs to be right about the limits, only to change what the problems name.
 */
import { createHash } from 'node:crypto';
import type { Row } from '../core/types.js';
import { formatPath } from './conflicts.js';
import { isPlainObject, jsonBytes, pathText, quote, type Path, type Problem } from './unstorable-problem.js';

/** A copy of `row` with its names renamed and, if too large, its longest texts cut; each change told in `repairs`. */
export function repairedCopy(
  row: Row,
  problems: readonly Problem[],
  limits: { maxNameBytes?: number; maxRecordBytes: number },
  repairs: string[],
): Row {
  const copy = copyContainers(row) as Row;
  for (const p of problems) {
    if (!p.rename) continue;
    const obj = resolve(copy, p.rename.at);
    if (obj === undefined) continue;
    const to = newName(p.rename.key, obj, limits.maxNameBytes);
    renameKey(obj, p.rename.key, to);
    repairs.push(`key ${quote(p.rename.key)} renamed to ${quote(to)} (${p.text})`);
  }
  if (problems.some((p) => p.size)) cutTexts(copy, limits.maxRecordBytes, repairs);
  return copy;
}

/** `<key>_<8 hex of its hash>`, NULs as `_`, shortened to the store's longest name; not a key `obj` has. */
function newName(key: string, obj: Record<string, unknown>, max: number | undefined): string {
  const hex = max === undefined ? 8 : Math.max(1, Math.min(8, max - 1));
  for (let salt = 0; ; salt++) {
    const suffix = `_${createHash('sha256').update(`${salt}:${key}`).digest('hex').slice(0, hex)}`;
    let base = key.replace(/\0/g, '_');
    if (max !== undefined) while (base.length > 0 && Buffer.byteLength(base + suffix) > max) base = dropLastChar(base);
    const name = base + suffix;
    if (!Object.hasOwn(obj, name)) return name;
  }
}

function copyContainers(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(copyContainers);
  if (typeof v === 'object' && v !== null && isPlainObject(v)) {
    const out: Record<string, unknown> = {};
    for (const k in v) out[k] = copyContainers((v as Record<string, unknown>)[k]);
    return out;
  }
  return v;
}

function resolve(row: Row, at: Path): Record<string, unknown> | undefined {
  let node: unknown = row;
  for (const s of at) node = (node as Record<string | number, unknown> | undefined)?.[s];
  return typeof node === 'object' && node !== null && !Array.isArray(node)
    ? (node as Record<string, unknown>)
    : undefined;
}

/** Renames `from` to `to` in place, keeping the keys' order. */
function renameKey(obj: Record<string, unknown>, from: string, to: string): void {
  const entries = Object.entries(obj);
  for (const k of Object.keys(obj)) delete obj[k];
  for (const [k, v] of entries) obj[k === from ? to : k] = v;
}

function dropLastChar(s: string): string {
  const last = s.charCodeAt(s.length - 1);
  return s.slice(0, last >= 0xdc00 && last <= 0xdfff ? -2 : -1);
}

/** Cuts the record's longest texts until its JSON fits `max` bytes; each cut is told in `repairs`. */
function cutTexts(row: Row, max: number, repairs: string[]): void {
  const texts: { holder: Record<string | number, unknown>; key: string | number; path: Path }[] = [];
  const collect = (v: unknown, path: Path): void => {
    if (Array.isArray(v))
      v.forEach((x, i) =>
        typeof x === 'string'
          ? texts.push({ holder: v as never, key: i, path: [...path, i] })
          : collect(x, [...path, i]),
      );
    else if (typeof v === 'object' && v !== null && isPlainObject(v))
      for (const k in v) {
        const x = (v as Record<string, unknown>)[k];
        if (typeof x === 'string') texts.push({ holder: v as Record<string, unknown>, key: k, path: [...path, k] });
        else collect(x, [...path, k]);
      }
  };
  collect(row, []);
  const cut = new Map<(typeof texts)[number], number>();
  for (let round = 0; round < 20; round++) {
    const bytes = jsonBytes(row);
    if (bytes <= max) break;
    const longest = texts.reduce<(typeof texts)[number] | undefined>(
      (a, t) => (a === undefined || (t.holder[t.key] as string).length > (a.holder[a.key] as string).length ? t : a),
      undefined,
    );
    if (longest === undefined) break;
    const s = longest.holder[longest.key] as string;
    if (!cut.has(longest)) cut.set(longest, s.length);
    const keep = Math.max(0, Math.floor(s.length - (bytes - max) * 1.05 - 16));
    const kept = s.slice(0, keep);
    const last = kept.charCodeAt(kept.length - 1);
    // Not half a surrogate pair.
    longest.holder[longest.key] = last >= 0xd800 && last <= 0xdbff ? kept.slice(0, -1) : kept;
  }
  for (const [t, was] of cut)
    repairs.push(
      `text at ${formatPath(pathText(t.path))} cut from ${was} to ${(t.holder[t.key] as string).length} characters (the record was over ${max} bytes as JSON)`,
    );
}
