/**
 * What the deep lookup API accepts and how it says no: the request bodies' schemas and the deep-lookup error
 * envelope `{"error": {"code", "message", "details"}}` (docs/service.md §4.3). Apart from the routes
 * (deep-lookup.ts) because every route shares them, and the wording of a refusal is a contract of its own that
 * clients' error messages are tested against.
 */
import { z } from 'zod';
import { HttpError, type EmuRequest } from '../router.js';

const queryText = z
  .string()
  .refine((q) => /^\s*find all\b/i.test(q), { message: 'must start with "Find all"' })
  .refine((q) => q.trim().length > 'find all'.length, { message: 'must say what to find after "Find all"' });

const resultLimit = z.number().int().positive();

export const previewItem = z.object({ query: queryText });

const specColumn = z.object({
  name: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be letters, digits and underscores'),
  description: z.string().default(''),
  type: z.enum(['enrichment', 'constraint']),
});

export const fromPreview = z.object({ preview_id: z.string().min(1), result_limit: resultLimit.optional() });

export const fromQuery = z.object({
  query: queryText,
  spec: z
    .object({
      name: z.string().optional(),
      query: z.string().optional(),
      title: z.string().optional(),
      columns: z
        .array(specColumn)
        .min(1)
        .refine((cols) => new Set(cols.map((c) => c.name)).size === cols.length, {
          message: 'column names must be distinct',
        }),
    })
    .optional(),
  result_limit: resultLimit.optional(),
});

export const enrichItem = z.object({
  column_name: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be letters, digits and underscores'),
  query: z.string().trim().min(1, 'must say what to find for each record'),
});

export function dlError(status: number, code: string, message: string, details: string): HttpError {
  return new HttpError(status, { error: { code, message, details } });
}

export function notFound(message: string, details: string): HttpError {
  return dlError(404, 'REQUEST_NOT_FOUND', message, details);
}

/** The body as JSON, with a bad body reported in this API's envelope (not the marketplace's). */
export function bodyJson(req: EmuRequest): Promise<unknown> {
  return req.json((text) => dlError(400, 'INVALID_QUERY', 'the request body is not valid JSON', text.slice(0, 200)));
}

/** The one item of an array body (or, when `bareObject`, a body that is the item itself). */
export function oneItem(value: unknown, bareObject: boolean): unknown {
  if (Array.isArray(value)) {
    if (value.length !== 1)
      throw dlError(400, 'INVALID_QUERY', `the body must be an array of exactly one item (got ${value.length})`, '');
    return value[0];
  }
  if (!bareObject) throw dlError(400, 'INVALID_QUERY', 'the body must be an array of one item: [{...}]', '');
  return value;
}

export function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object';
}

export function parse<T>(schema: z.ZodType<T>, value: unknown): T {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const messages = parsed.error.issues.map((i) => {
    const where = i.path.filter((p) => typeof p !== 'number').join('.');
    return where ? `"${where}" ${i.message}` : i.message;
  });
  // A problem with the query text leads: that is what INVALID_QUERY is about.
  const first = messages.find((m) => m.startsWith('"query"')) ?? messages[0] ?? 'invalid request body';
  throw dlError(400, 'INVALID_QUERY', first, messages.join('; '));
}
