/**
 * The early, readable refusal of a `sql` check's text (src/observe/checks/sql-text.ts): what a check may look like in
 * DuckDB's and PostgreSQL's syntax passes, and what cannot be one query inside sluice's wrapper is named. The
 * enforcement is the databases' (checks-read-only.test.ts); this is only the clear first answer.
 */
import { describe, expect, it } from 'vitest';
import { checkSqlProblem } from '../../src/observe/checks/sql-text.js';

describe('checkSqlProblem', () => {
  it.each([
    'SELECT * FROM {table} WHERE id < 0',
    'SELECT * FROM {table} WHERE id < 0;',
    "select * from {table} where name = 'a;b)' -- a comment with ; and )",
    "SELECT * FROM {table} WHERE name = 'it''s; (not'",
    "SELECT * FROM {table} WHERE name = E'it\\'s; )'",
    'SELECT * FROM {table} WHERE "odd;name)" IS NULL',
    'SELECT * FROM {table} WHERE name = $$a;)$$ OR name = $x$b;($x$',
    '/* leading; comment /* nested ) */ */ SELECT * FROM {table}',
    'WITH x AS (SELECT * FROM {table}) SELECT * FROM x WHERE (id > 1)',
    'FROM {table} WHERE id < 0',
    '(SELECT * FROM {table})',
    'TABLE {table}',
    'SELECT id FROM {table} -- trailing comment',
  ])('accepts %s', (sql) => {
    expect(checkSqlProblem(sql)).toBeUndefined();
  });

  it.each([
    ['SELECT * FROM {table} WHERE false) v; DELETE FROM {table}; SELECT * FROM (SELECT 1', /more than one statement/],
    ['SELECT * FROM {table}; CREATE TABLE evil AS SELECT 1', /more than one statement/],
    ['SELECT * FROM {table} WHERE false) v UNION ALL SELECT 1 FROM (SELECT 1', /closes a parenthesis/],
    ['SELECT * FROM ({table}', /never closed/],
    ['DELETE FROM {table}', /not a query: .* \(this one with DELETE\)/],
    ["COPY (SELECT * FROM {table}) TO '/tmp/x'", /not a query/],
    ["SELECT * FROM read_text('/etc/passwd')", /does not read `\{table\}`/],
    ["SELECT * FROM {table} WHERE name = 'open", /unterminated string/],
    ['SELECT * FROM {table} /* open', /unterminated comment/],
  ])('refuses %s', (sql, why) => {
    expect(checkSqlProblem(sql)).toMatch(why);
  });
});
