/**
 * Quoting in SQL text, as both SQL dialects sluice writes take it (DuckDB's and PostgreSQL's are the standard's here):
 * one place, so a name or a value from the data can never close the quote it sits in.
 */

/** `"name"` with embedded quotes doubled: safe for any column, table, schema or struct field name. */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** `'text'` with embedded quotes doubled. */
export function quoteString(s: string): string {
  return `'${s.replace(/'/g, "''")}'`;
}
