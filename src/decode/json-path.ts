/**
 * The dotted path to the records array inside a JSON document (`reviews`, `data.items`), and what the array decoder
 * tells a user whose path does not lead to an array. Apart from the scanner (json-array.ts) because these run at
 * most once per document and only build messages: each names where the walk stopped and what to write instead.
 */
import { DecodeError, SluiceError } from '../core/errors.js';
import { LIMIT_OPTIONS, LimitExceeded, formatBytes } from '../core/limits.js';
import { describeValue, startsValue } from './byte-codes.js';
import type { DecodeContext } from './context.js';

/** The keys leading to the array; empty: the document is the array. */
export function parsePath(path: string | undefined): string[] {
  if (path === undefined || path === '') return [];
  const parts = path.split('.');
  if (parts.some((p) => p === ''))
    throw new SluiceError(`invalid JSON path ${JSON.stringify(path)}`, {
      hint: 'write the keys leading to the array separated by dots, e.g. `reviews` or `data.items`',
    });
  return parts;
}

/** Byte `c` at decompressed offset `at` cannot stand where it does. */
export function malformedAt(ctx: DecodeContext, at: number, c: number): DecodeError {
  return new DecodeError(ctx.unit, at, `malformed JSON: unexpected ${JSON.stringify(String.fromCharCode(c))}`);
}

/** The path's end holds a value that begins with byte `c` and is neither an array nor null. */
export function notAnArray(ctx: DecodeContext, path: string[], c: number, at: number): Error {
  if (!startsValue(c)) return malformedAt(ctx, at, c);
  const where = path.length === 0 ? 'the JSON document' : `\`${path.join('.')}\``;
  return new SluiceError(`${ctx.unit}: ${where} is ${describeValue(c)}, not an array of records (at byte ${at})`, {
    hint:
      path.length === 0
        ? 'set the path to the array inside the document (e.g. `reviews`, `organic`, `data.items`)'
        : 'point the path at an array of records',
  });
}

/** The value at `path[0..depth)` begins with byte `c`: not an object, so the path cannot go on. */
export function notAnObject(ctx: DecodeContext, path: string[], depth: number, c: number): SluiceError {
  const where = depth === 0 ? 'the JSON document' : `\`${path.slice(0, depth).join('.')}\``;
  return new SluiceError(
    `${ctx.unit}: path \`${path.join('.')}\` not found: ${where} is ${describeValue(c)}, not an object`,
    { hint: 'check the path against the document: keys separated by dots, each naming an object member' },
  );
}

/** The document ended without the path: `deepest` is the deepest path object seen, with (some of) its keys. */
export function pathNotFound(
  ctx: DecodeContext,
  path: string[],
  deepest: { depth: number; keys: string[] } | null,
): SluiceError {
  const { depth, keys } = deepest ?? { depth: 0, keys: [] };
  const where = depth === 0 ? 'the document' : `\`${path.slice(0, depth).join('.')}\``;
  const seen = keys.length > 0 ? `; its keys: ${keys.join(', ')}` : '';
  return new SluiceError(
    `${ctx.unit}: path \`${path.join('.')}\` not found in the JSON document (${where} has no \`${path[depth]}\`${seen})`,
    { hint: 'set the path to the key that holds the array of records' },
  );
}

/**
 * A key of an object on the way to the array, longer than a record may be. It cannot be skipped like a record:
 * whether the array lies under it is only known once it is read whole. No real answer has such keys.
 */
export function keyTooLong(ctx: DecodeContext, at: number): LimitExceeded {
  return new LimitExceeded(
    'maxRecordBytes',
    `${ctx.unit}: a key of the JSON document is over the record size limit of ${formatBytes(ctx.maxRecordBytes)} (${LIMIT_OPTIONS.maxRecordBytes}) at byte ${at}; the document cannot be read past it`,
  );
}
