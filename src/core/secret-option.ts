/**
 * Options whose values are secrets, marked in the component's own schema (a fact of the component, like its
 * description): `value` — the whole value is one (an API key); `connection` — a connection string or URL whose
 * credentials are (a password inside `postgres://…` or libpq's `key=value`, `user:password@` in an http(s) URL).
 * pipeline/secrets.ts reads the marks when a pipeline file loads and registers what they hold with core/redact.ts.
 */
import { z } from 'zod';

export type SecretKind = 'value' | 'connection';

export const secretOptions = z.registry<{ secret: SecretKind }>();

/** `schema`, marked as holding a secret of `kind`. Mark the outermost schema of the option (after `.describe()`). */
export function secretOption<T extends z.ZodType>(schema: T, kind: SecretKind): T {
  secretOptions.add(schema, { secret: kind });
  return schema;
}
