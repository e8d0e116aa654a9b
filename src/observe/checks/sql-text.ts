/**
 * What the text of a `sql` check shows before any database sees it: one statement, a query, parentheses that stay
 * inside the check (sluice wraps it in `SELECT … FROM (<check>) v`), and `{table}`. This is the clear, early answer
 * for the obvious mistakes and attacks; it is not the enforcement: each sink runs a check read-only, one statement,
 * in its database (see `QueryableOutput.query`), which refuses whatever this reading of the text misses.
 *
 * The scan knows the literals of DuckDB and PostgreSQL well enough to skip them: `'…'` (with `''`), `E'…'` (with
 * backslash escapes), `"…"` identifiers, `$tag$…$tag$` bodies, `--` and nested `/* … *\/` comments.
 */

/** Keywords a query starts with (after comments and opening parentheses). */
const QUERY_STARTS = new Set(['select', 'with', 'from', 'values', 'table']);

/** Why the check's text cannot be a check, or undefined when it can. */
export function checkSqlProblem(sql: string): string | undefined {
  const scan = scanSql(sql);
  if (scan.unterminated) return `it has an unterminated ${scan.unterminated}`;
  if (scan.statements > 1) return 'it holds more than one statement: a check is one query (a `;` may only end it)';
  if (scan.closesWrapper)
    return 'a `)` closes a parenthesis the check did not open: sluice wraps the query in parentheses, and the check must stay inside them';
  if (scan.depth > 0) return 'a `(` is never closed';
  const first = scan.firstWord?.toLowerCase();
  if (first === undefined || !QUERY_STARTS.has(first))
    return `it is not a query: a check starts with SELECT, WITH, FROM, VALUES or TABLE${scan.firstWord ? ` (this one with ${scan.firstWord})` : ''}`;
  if (!sql.includes('{table}'))
    return 'it does not read `{table}`, which stands for the sink’s table: a check reads the rows its sink committed';
  return undefined;
}

interface SqlScan {
  /** Statements with something in them (a trailing `;` ends the last one, it does not start another). */
  statements: number;
  /** The first word outside comments and parentheses. */
  firstWord: string | undefined;
  /** Parentheses open at the end. */
  depth: number;
  /** A `)` with no `(` before it. */
  closesWrapper: boolean;
  /** What never ended: `string`, `quoted identifier`, `comment`, `$…$ body`. */
  unterminated?: string;
}

function scanSql(sql: string): SqlScan {
  const out: SqlScan = { statements: 0, firstWord: undefined, depth: 0, closesWrapper: false };
  let i = 0;
  let statementHasContent = false;
  const n = sql.length;
  const content = (): void => {
    if (!statementHasContent) out.statements++;
    statementHasContent = true;
  };
  while (i < n) {
    const c = sql[i]!;
    const next = sql[i + 1];
    if (/\s/.test(c)) {
      i++;
    } else if (c === '-' && next === '-') {
      const end = sql.indexOf('\n', i);
      i = end < 0 ? n : end + 1;
    } else if (c === '/' && next === '*') {
      const end = blockCommentEnd(sql, i);
      if (end < 0) return { ...out, unterminated: 'comment' };
      i = end;
    } else if (c === "'") {
      content();
      const escapes = /[eE]/.test(sql[i - 1] ?? '') && !/[\w$]/.test(sql[i - 2] ?? '');
      const end = quotedEnd(sql, i, "'", escapes);
      if (end < 0) return { ...out, unterminated: 'string' };
      i = end;
    } else if (c === '"') {
      content();
      const end = quotedEnd(sql, i, '"', false);
      if (end < 0) return { ...out, unterminated: 'quoted identifier' };
      i = end;
    } else if (c === '$' && /^\$[A-Za-z_]?\w*\$/.test(sql.slice(i)) && !/[\w$]/.test(sql[i - 1] ?? '')) {
      content();
      const tag = /^\$[A-Za-z_]?\w*\$/.exec(sql.slice(i))![0];
      const end = sql.indexOf(tag, i + tag.length);
      if (end < 0) return { ...out, unterminated: `${tag} body` };
      i = end + tag.length;
    } else if (c === ';') {
      statementHasContent = false;
      i++;
    } else if (c === '(') {
      content();
      out.depth++;
      i++;
    } else if (c === ')') {
      content();
      if (out.depth === 0) out.closesWrapper = true;
      else out.depth--;
      i++;
    } else {
      content();
      const word = /^[A-Za-z_]\w*/.exec(sql.slice(i, i + 64))?.[0];
      if (word !== undefined) {
        out.firstWord ??= word;
        i += word.length;
      } else {
        // Anything else before the first word (a number, an operator) leaves the statement without a query word.
        out.firstWord ??= c;
        i++;
      }
    }
  }
  return out;
}

/** Index after the quote that closes the literal opened at `start` (a doubled quote stays inside); -1 if none. */
function quotedEnd(sql: string, start: number, quote: string, backslashEscapes: boolean): number {
  for (let i = start + 1; i < sql.length; i++) {
    const c = sql[i];
    if (backslashEscapes && c === '\\') i++;
    else if (c === quote) {
      if (sql[i + 1] === quote) i++;
      else return i + 1;
    }
  }
  return -1;
}

/** Index after the `*\/` that closes the comment opened at `start`; PostgreSQL nests them. -1 if none. */
function blockCommentEnd(sql: string, start: number): number {
  let depth = 0;
  for (let i = start; i < sql.length - 1; i++) {
    if (sql[i] === '/' && sql[i + 1] === '*') {
      depth++;
      i++;
    } else if (sql[i] === '*' && sql[i + 1] === '/') {
      depth--;
      i++;
      if (depth === 0) return i + 1;
    }
  }
  return -1;
}
