/**
 * Checks after the load: each sink's `checks:` run against what the sink committed, once the run finished (so the
 * data stays whatever they find). Every result is reported with a few violating rows; a failed `error` check fails
 * the run with exit code 6 (ChecksFailed), a failed `warn` check is a warning. A check that cannot run (a column
 * that does not exist) fails with the database's message; one the sink refuses to run (a second statement, a
 * write, a file outside the output: `QueryableOutput.query` runs read-only) fails as `refused: <why>`.
 */
import { ChecksFailed, QueryRefused } from '../../core/errors.js';
import { redact } from '../../core/redact.js';
import type { Logger, QueryableOutput, Sink } from '../../core/types.js';
import type { CheckResult } from '../events.js';
import { parseDuration } from '../../core/duration.js';
import type { CheckConfig } from './config.js';
import { checkName, newestQuery, rowCountQuery, violationQueries } from './queries.js';

export interface SinkChecks {
  sink: Sink;
  checks: readonly CheckConfig[];
  /** Rows this run committed into the sink (`row_count` with `scope: run`). */
  runRecords: number;
}

export interface RunChecksOptions {
  log: Logger;
  /** The run's clock (ms since the epoch), for freshness. */
  now?: () => number;
}

export async function runChecks(targets: readonly SinkChecks[], opts: RunChecksOptions): Promise<CheckResult[]> {
  const results: CheckResult[] = [];
  for (const t of targets) {
    if (t.checks.length === 0) continue;
    const sink = t.sink.describe();
    const fail = (c: CheckConfig, message: string): CheckResult => ({
      sink,
      name: checkName(c),
      type: c.type,
      severity: c.severity,
      passed: false,
      message,
    });
    let out: QueryableOutput;
    try {
      out = await t.sink.queryable();
    } catch (err) {
      results.push(...t.checks.map((c) => fail(c, `could not query the sink: ${firstLine(err)}`)));
      continue;
    }
    try {
      for (const c of t.checks) {
        try {
          results.push({ sink, ...(await runCheck(c, out, t.runRecords, opts.now ?? Date.now)) });
        } catch (err) {
          // A refusal says so itself (`refused: it writes (…)`): nothing of it ran.
          results.push(fail(c, err instanceof QueryRefused ? firstLine(err) : `could not run: ${firstLine(err)}`));
        }
      }
    } finally {
      await out.close().catch(() => undefined);
    }
  }
  for (const r of results) if (!r.passed) opts.log.warn(`check ${r.name} on ${r.sink}: ${formatCheck(r)}`);
  return results;
}

async function runCheck(
  c: CheckConfig,
  out: QueryableOutput,
  runRecords: number,
  now: () => number,
): Promise<Omit<CheckResult, 'sink'>> {
  const base = { name: checkName(c), type: c.type, severity: c.severity };
  if (c.type === 'row_count') {
    const n = c.scope === 'run' ? runRecords : toNumber((await out.query(rowCountQuery(out)))[0]?.n);
    const low = c.min !== undefined && n < c.min;
    const high = c.max !== undefined && n > c.max;
    const bounds = [c.min !== undefined && `≥ ${c.min}`, c.max !== undefined && `≤ ${c.max}`].filter(Boolean);
    const rows = `${n} row(s)${c.scope === 'run' ? ' committed by this run' : ''}`;
    return {
      ...base,
      passed: !low && !high,
      message: low || high ? `${rows}, expected ${bounds.join(' and ')}` : rows,
    };
  }
  if (c.type === 'freshness') {
    const maxAge = parseDuration(c.max_age);
    const raw = (await out.query(newestQuery(c.column, out)))[0]?.ms;
    if (raw === null || raw === undefined) return { ...base, passed: false, message: `${c.column} has no value` };
    const age = now() - toNumber(raw);
    const newest = new Date(toNumber(raw)).toISOString();
    return {
      ...base,
      passed: age <= maxAge,
      message: `newest ${c.column} ${newest} (${ageText(age)} old)${age > maxAge ? `, older than ${c.max_age}` : ''}`,
    };
  }
  const q = violationQueries(c, out)!;
  const violations = toNumber((await out.query(q.count))[0]?.n);
  if (violations === 0) return { ...base, passed: true, message: `no ${q.what}`, violations };
  const sample = (await out.query(q.sample)).map(jsonSafe);
  return { ...base, passed: false, message: `${violations} ${q.what}`, violations, sample };
}

/** The error a run ends with when an `error` check failed; undefined when none did. */
export function checksFailure(results: readonly CheckResult[]): ChecksFailed | undefined {
  const failed = results.filter((r) => !r.passed && r.severity === 'error');
  if (failed.length === 0) return undefined;
  const first = failed[0]!;
  return new ChecksFailed(
    `${failed.length} check(s) failed: ${first.name} on ${first.sink}: ${first.message}${failed.length > 1 ? ` (and ${failed.length - 1} more)` : ''}`,
    {
      hint: 'the run’s data is committed: correct the data (or the check), then run again; `sluice runs` and the summary list every result',
    },
  );
}

/** One result in one line, with its first violating rows. */
export function formatCheck(r: CheckResult): string {
  const verdict = r.passed ? 'passed' : r.severity === 'warn' ? 'warning' : 'FAILED';
  const sample = r.sample?.length
    ? `; e.g. ${r.sample
        .slice(0, 3)
        .map((s) => JSON.stringify(s))
        .join(' ')}`
    : '';
  return redact(`${verdict}: ${r.message}${sample}`);
}

function toNumber(v: unknown): number {
  return typeof v === 'bigint' ? Number(v) : Number(v ?? 0);
}

/** pg gives Dates and big integers as strings, DuckDB's JSON rows strings: any of them goes into JSON as it is. */
function jsonSafe(row: Record<string, unknown>): Record<string, unknown> {
  return JSON.parse(JSON.stringify(row, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v))) as Record<
    string,
    unknown
  >;
}

function ageText(ms: number): string {
  const s = Math.round(ms / 1000);
  if (Math.abs(s) < 120) return `${s}s`;
  if (Math.abs(s) < 7200) return `${Math.round(s / 60)}m`;
  return `${Math.round(s / 360) / 10}h`;
}

function firstLine(err: unknown): string {
  return redact((err instanceof Error ? err.message : String(err)).split('\n')[0]!);
}
