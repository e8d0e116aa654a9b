/**
 * Whether a record's partition values can become hive partition directories (`<column>=<value escaped>`): a value
 * that is a container, one a reader takes for null, or one whose directory name is longer than a file name may be.
 * Apart from the judge's walk (storable.ts) because only the file sinks partition, and because the escaping rule is
 * the writer's (DuckDB's hive partitioning), which this must follow byte for byte.
 */
import type { Row, StoreLimits } from '../core/types.js';
import { isPlainObject, quote, type Problem } from './unstorable-problem.js';

/** The directory name hive readers take for a null partition value. */
const HIVE_NULL = '__HIVE_DEFAULT_PARTITION__';

/** Adds to `problems` why `row`'s partition values cannot be directories under `p`. */
export function partitionProblems(row: Row, p: NonNullable<StoreLimits['partitions']>, problems: Problem[]): void {
  let pathBytes = 0;
  for (const column of p.columns) {
    const v = row[column];
    if (v === null || v === undefined) continue;
    const what =
      typeof v === 'string' ? `partition value ${quote(v)} of ${quote(column)}` : `partition value of ${quote(column)}`;
    if (typeof v === 'object' && (Array.isArray(v) || isPlainObject(v))) {
      problems.push({
        text: `the partition value of ${quote(column)} is ${Array.isArray(v) ? 'a list' : 'an object'}: a partition directory takes a single value`,
      });
      continue;
    }
    const text = typeof v === 'string' ? v : String(v instanceof Date ? v.toISOString() : v);
    if (typeof v === 'string' && (/^null$/i.test(v) || v === HIVE_NULL)) {
      problems.push({ text: `${what}: a reader takes the directory ${quote(`${column}=${v}`)} for null` });
      continue;
    }
    const bytes = Buffer.byteLength(column) + 1 + escapedBytes(text);
    pathBytes += bytes + 1;
    if (bytes > p.maxSegmentBytes)
      problems.push({
        text: `${what}: its directory name would be ${bytes} bytes, over the ${p.maxSegmentBytes} a file name may have`,
      });
  }
  if (pathBytes > p.maxPathBytes)
    problems.push({
      text: `partition directories of ${pathBytes} bytes, over the ${p.maxPathBytes} the output's paths leave them`,
    });
}

/** UTF-8 bytes of `s` as a hive partition directory escapes it: all but `A-Za-z0-9-._~` as `%XX` per byte. */
export function escapedBytes(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += /[A-Za-z0-9\-._~]/.test(s[i]!) ? 1 : 3;
    else if (c < 0x800) n += 6;
    else if (c >= 0xd800 && c <= 0xdbff) {
      n += 12;
      i++;
    } else n += 9;
  }
  return n;
}
