/**
 * Reading `POST /datasets/filter` in its two modes (docs/service.md §2.1): JSON `{dataset_id, records_limit?, filter}`,
 * or multipart with `filter` (JSON text) and repeated `files[]` parts, `dataset_id` and `records_limit` in the
 * query. Multipart is parsed by the platform (`Response#formData`), not a dependency. Every problem with the
 * request's shape is collected into one 400 `{validation_errors}`.
 */
import { HttpError, type EmuRequest } from '../router.js';
import type { UploadedFile } from './filter-files.js';
import { validateFilter, type FilterNode } from './filter-validate.js';

export interface FilterRequest {
  datasetId: string;
  recordsLimit?: number;
  filter: FilterNode;
  /** The filter as sent, before validation: what a restarted emulator validates and compiles again. */
  rawFilter: unknown;
  /** Uploaded files by file name. */
  files: Map<string, UploadedFile>;
}

const JSON_KEYS = ['dataset_id', 'records_limit', 'filter'];
const FORM_FIELDS = ['filter', 'files[]', 'files'];

export async function readFilterRequest(req: EmuRequest): Promise<FilterRequest> {
  const type = String(req.headers['content-type'] ?? '');
  return /^multipart\/form-data/i.test(type) ? readMultipart(req, type) : readJsonMode(req);
}

async function readJsonMode(req: EmuRequest): Promise<FilterRequest> {
  const body = await req.json();
  const errors: string[] = [];
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw new HttpError(400, { validation_errors: ['"value" must be of type object'] });
  const o = body as Record<string, unknown>;
  for (const k of Object.keys(o)) if (!JSON_KEYS.includes(k)) errors.push(`"${k}" is not allowed`);
  const datasetId = datasetIdOf(o.dataset_id, errors);
  const recordsLimit = recordsLimitOf(o.records_limit, errors);
  let filter: FilterNode | undefined;
  if (o.filter === undefined) errors.push('"filter" is required');
  else {
    const v = validateFilter(o.filter);
    errors.push(...v.errors);
    filter = v.filter;
  }
  if (errors.length > 0 || !filter) throw new HttpError(400, { validation_errors: errors });
  return {
    datasetId,
    ...(recordsLimit !== undefined && { recordsLimit }),
    filter,
    rawFilter: o.filter,
    files: new Map(),
  };
}

async function readMultipart(req: EmuRequest, contentType: string): Promise<FilterRequest> {
  let form: FormData;
  try {
    form = await new Response(await req.body(), { headers: { 'content-type': contentType } }).formData();
  } catch {
    throw new HttpError(400, {
      validation_errors: ['the body is not valid multipart/form-data (send `filter` and `files[]` parts)'],
    });
  }
  const errors: string[] = [];
  const datasetId = datasetIdOf(req.query.get('dataset_id') ?? undefined, errors);
  const limitText = req.query.get('records_limit');
  const recordsLimit = recordsLimitOf(limitText ?? undefined, errors);

  const seen = new Set<string>();
  for (const [k] of form) seen.add(k);
  for (const k of seen) if (!FORM_FIELDS.includes(k)) errors.push(`"${k}" is not allowed`);

  let filter: FilterNode | undefined;
  let parsed: unknown;
  const text = form.get('filter');
  if (text === null) errors.push('"filter" is required');
  else {
    const raw = typeof text === 'string' ? text : await text.text();
    try {
      parsed = JSON.parse(raw);
    } catch {
      errors.push('"filter" must be valid JSON');
    }
    if (parsed !== undefined) {
      const v = validateFilter(parsed);
      errors.push(...v.errors);
      filter = v.filter;
    }
  }

  const files = new Map<string, UploadedFile>();
  for (const entry of [...form.getAll('files[]'), ...form.getAll('files')]) {
    if (typeof entry === 'string') {
      errors.push('"files[]" must be a file part (with a file name), not a text field');
      continue;
    }
    files.set(entry.name, { name: entry.name, text: await entry.text() });
  }
  if (errors.length > 0 || !filter) throw new HttpError(400, { validation_errors: errors });
  return { datasetId, ...(recordsLimit !== undefined && { recordsLimit }), filter, rawFilter: parsed, files };
}

function datasetIdOf(v: unknown, errors: string[]): string {
  if (v === undefined || v === null) errors.push('"dataset_id" is required');
  else if (typeof v !== 'string') errors.push('"dataset_id" must be a string');
  else if (v.trim() === '') errors.push('"dataset_id" is not allowed to be empty');
  else return v;
  return '';
}

/** A positive integer, given as a number or (query string, lenient JSON) numeric text. */
function recordsLimitOf(v: unknown, errors: string[]): number | undefined {
  if (v === undefined || v === null) return undefined;
  const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : NaN;
  if (!Number.isFinite(n)) errors.push('"records_limit" must be a number');
  else if (!Number.isInteger(n)) errors.push('"records_limit" must be an integer');
  else if (n <= 0) errors.push('"records_limit" must be a positive number');
  else return n;
  return undefined;
}
