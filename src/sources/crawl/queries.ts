/** The queries of a crawl: from a file (CSV with a `query` column, or one per line), without repeats. */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parse as parseCsv } from 'csv-parse/sync';
import { SluiceError } from '../../core/errors.js';

/**
 * Queries from a file: a CSV whose header has a `query` column (required in a `.csv` file), or else one query per
 * line (blank lines skipped).
 * Relative paths resolve against `baseDir` (the pipeline file's directory).
 */
export async function readQueriesFile(file: string, baseDir: string): Promise<string[]> {
  const full = path.resolve(baseDir, file);
  let text: string;
  try {
    text = await readFile(full, 'utf8');
  } catch (err) {
    throw new SluiceError(`cannot read queries_file ${full}: ${(err as Error).message}`, {
      hint: 'queries_file is relative to the pipeline file; check the path',
      cause: err,
    });
  }
  text = text.replace(/^\uFEFF/, '');
  const firstLine = text.split(/\r?\n/, 1)[0] ?? '';
  let header: string[] = [];
  try {
    header = (parseCsv(firstLine, { relax_quotes: true }) as string[][])[0] ?? [];
  } catch {
    header = [];
  }
  const col = header.findIndex((h) => h.trim().toLowerCase() === 'query');
  // A .csv file is read as CSV: taking its lines as queries would search for the header and for whole rows.
  if (col < 0 && /\.csv$/i.test(full))
    throw new SluiceError(`queries_file ${full} has no \`query\` column (its header is "${header.join(',')}")`, {
      hint: 'name the column that holds the queries `query`, or use a text file (not .csv) with one query per line',
    });
  let queries: string[];
  if (col >= 0) {
    let rows: string[][];
    try {
      rows = parseCsv(text, { relax_column_count: true, skip_empty_lines: true }) as string[][];
    } catch (err) {
      throw new SluiceError(`queries_file ${full} is not valid CSV: ${(err as Error).message}`, {
        hint: 'quote fields that contain commas, or use a plain file with one query per line',
        cause: err,
      });
    }
    queries = rows.slice(1).map((r) => (r[col] ?? '').trim());
  } else {
    queries = text.split(/\r?\n/).map((l) => l.trim());
  }
  queries = queries.filter((q) => q !== '');
  if (queries.length === 0)
    throw new SluiceError(`queries_file ${full} holds no queries`, {
      hint: 'write one query per line, or a CSV with a `query` column',
    });
  return queries;
}

/** Queries in first-seen order without repeats (a repeat would be the same units). */
export function uniqueQueries(queries: string[]): string[] {
  return [...new Set(queries.map((q) => q.trim()).filter((q) => q !== ''))];
}

/**
 * The queries a crawl is configured with: its `queries` list or its `queries_file` (the schemas let exactly one be
 * set), without repeats. The `serp` source and the reviews' `from_serp` take queries the same way.
 */
export async function configuredQueries(
  cfg: { queries?: string[] | undefined; queries_file?: string | undefined },
  baseDir: string,
): Promise<string[]> {
  return uniqueQueries(cfg.queries ?? (await readQueriesFile(cfg.queries_file!, baseDir)));
}
