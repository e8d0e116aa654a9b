/**
 * Whether rows fit a declared schema, by the same rules the sinks type data with: apart from declared.ts because
 * it needs inference (infer.ts), and core/types.ts, which infer.ts reads, imports declared.ts.
 */
import { ConflictLog } from './conflicts.js';
import { declaredTypes, type DeclaredSchema } from '../core/declared.js';
import { InferredSchema } from './infer.js';
import { joinTypes } from './join.js';
import { NULL, describeType, sameType } from '../core/logical-type.js';

/**
 * Where a row does not fit a declared schema: keys it lacks or adds, values whose inferred type (infer.ts) would
 * change the declared one when joined into it (join.ts), and nulls in columns declared non-null. Empty: it fits.
 * For tests and checks, not the hot path.
 */
export function misfits(schema: DeclaredSchema, row: Record<string, unknown>): string[] {
  const out: string[] = [];
  const declared = declaredTypes(schema);
  for (const k of Object.keys(row)) if (!declared.has(k)) out.push(`${k}: not declared`);
  const inferred = new InferredSchema();
  inferred.observeRow(row);
  for (const c of schema) {
    if (!(c.name in row)) {
      out.push(`${c.name}: missing`);
      continue;
    }
    const v = row[c.name];
    if (v === null || v === undefined) {
      if (!c.nullable) out.push(`${c.name}: null, but declared not null`);
      continue;
    }
    const log = new ConflictLog();
    const seen = inferred.column(c.name) ?? NULL;
    const joined = joinTypes(c.type, seen, [c.name], log);
    if (!sameType(joined, c.type) || log.list().length > 0)
      out.push(`${c.name}: a value of type ${describeType(seen)} does not fit ${describeType(c.type)}`);
  }
  return out;
}
