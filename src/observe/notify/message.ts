/**
 * What a notification says, in sluice's own JSON body or as a Slack-compatible `{"text": …}`. Both carry the run
 * id, so a message leads to the run's log lines, metrics, trace, `runs.jsonl` line and `_sluice_runs` row.
 */
import { hostname } from 'node:os';
import { redact } from '../../core/redact.js';
import type { NotifyEvent } from '../config.js';
import type { CheckResult, RunEnded, RunIdentity, RunTotals, SinkSchemaChange } from '../events.js';

export interface Notice extends RunIdentity {
  event: NotifyEvent;
  /** One line: what happened. */
  title: string;
  status: 'succeeded' | 'failed' | 'interrupted' | 'running';
  exitCode?: number;
  cause?: string;
  fix?: string;
  durationMs?: number;
  totals: RunTotals;
  schemaChanges?: SinkSchemaChange[];
  checks?: CheckResult[];
}

/** The events a finished run sends (a webhook gets those it subscribed to). */
export function endNotices(e: RunEnded): Notice[] {
  const base = {
    run: e.run,
    pipeline: e.pipeline,
    ...(e.shard !== undefined && { shard: e.shard }),
    status: e.outcome,
    exitCode: e.exitCode,
    durationMs: e.durationMs,
    totals: e.totals,
    ...(e.cause !== undefined && { cause: e.cause }),
    ...(e.fix !== undefined && { fix: e.fix }),
  };
  const who = `${e.pipeline}${e.shard ? ` (shard ${e.shard})` : ''}`;
  const notices: Notice[] = [];
  const failedChecks = e.checks.filter((c) => !c.passed);
  if (e.outcome !== 'succeeded') {
    // One message per failure, of the kind that tells its owner most: a spent budget and failed checks are failures.
    const event: NotifyEvent = e.exitCode === 4 ? 'failure_budget' : e.exitCode === 6 ? 'checks' : 'failure';
    const verb = e.outcome === 'interrupted' ? 'was interrupted' : 'failed';
    notices.push({
      ...base,
      event,
      title: `sluice ${who} ${verb} (exit ${e.exitCode}): ${e.cause ?? 'unknown cause'}`,
      ...(event === 'checks' && { checks: e.checks }),
    });
  } else {
    if (failedChecks.length > 0)
      notices.push({
        ...base,
        event: 'checks',
        title: `sluice ${who}: ${failedChecks.length} check(s) warned`,
        checks: e.checks,
      });
    notices.push({
      ...base,
      event: 'success',
      title: `sluice ${who} succeeded: ${e.totals.records} records in ${Math.round(e.durationMs / 1000)} s`,
    });
  }
  if (e.schemaChanges.length > 0 || e.exitCode === 5)
    notices.push({
      ...base,
      event: 'schema_change',
      title:
        e.exitCode === 5
          ? `sluice ${who}: a schema contract refused the data: ${e.cause ?? ''}`
          : `sluice ${who}: columns changed in ${e.schemaChanges.map((s) => s.sink).join(', ')}`,
      schemaChanges: e.schemaChanges,
    });
  return notices;
}

/**
 * How bad the news is, from what happened to the run, never from the event's name alone: a `checks` message of a run
 * that succeeded with `warn` checks failing is a warning, the same event of a run that exit 6 ended is an error; a
 * column added is news, a schema contract refusing the data (exit 5) an error.
 */
export type Severity = 'error' | 'warning' | 'info' | 'ok';

export function severityOf(n: Notice): Severity {
  if (n.status === 'failed') return 'error';
  if (n.status === 'interrupted' || n.event === 'stall' || n.event === 'checks') return 'warning';
  if (n.event === 'schema_change') return 'info';
  return 'ok';
}

const SLACK_ICONS: Record<Severity, string> = {
  error: ':x:',
  warning: ':warning:',
  info: ':information_source:',
  ok: ':white_check_mark:',
};

export function stallNotice(id: RunIdentity, totals: RunTotals, stalledMs: number, after: string): Notice {
  return {
    ...id,
    event: 'stall',
    status: 'running',
    title: `sluice ${id.pipeline}${id.shard ? ` (shard ${id.shard})` : ''} stalled: no unit committed for ${after} (${totals.units.committed} committed so far)`,
    durationMs: stalledMs,
    totals,
  };
}

/**
 * sluice's own body: every field a receiver may route or display on. The whole body goes through the one redaction
 * point, check samples and schema changes included (a record's value may equal a secret).
 */
export function jsonBody(n: Notice): Record<string, unknown> {
  return redactBody({
    event: n.event,
    severity: severityOf(n),
    title: n.title,
    status: n.status,
    pipeline: n.pipeline,
    run: n.run,
    ...(n.shard !== undefined && { shard: n.shard }),
    ...(n.exitCode !== undefined && { exit_code: n.exitCode }),
    ...(n.cause !== undefined && { cause: n.cause }),
    ...(n.fix !== undefined && { fix: n.fix }),
    ...(n.durationMs !== undefined && { duration_ms: n.durationMs }),
    units: n.totals.units,
    records: n.totals.records,
    records_per_sink: n.totals.recordsPerSink,
    bytes: n.totals.bytes,
    retries: n.totals.retries,
    dead_letters: n.totals.deadLetters,
    paid_calls: n.totals.paidCalls,
    records_charged: n.totals.recordsCharged,
    paid: n.totals.paid,
    ...(n.schemaChanges && { schema_changes: n.schemaChanges }),
    ...(n.checks && { checks: n.checks }),
    host: hostname(),
    time: new Date().toISOString(),
  });
}

/**
 * Slack's incoming-webhook body (Mattermost, Rocket.Chat and Teams' Slack-compatible hooks take it too). Only the
 * icon, the words sluice puts between the parts and the run id's code span are markup: every part that comes from
 * elsewhere (a cause quoting the service's answer, a column, a check's message) is redacted, then escaped as
 * Slack asks (`&`, `<`, `>`), so that `<!channel>` or `<https://…|Click here>` in it is shown, never acted on.
 */
export function slackBody(n: Notice): { text: string } {
  const icon = n.event === 'stall' ? ':hourglass:' : SLACK_ICONS[severityOf(n)];
  const lines = [`${icon} ${mrkdwn(n.title)}`];
  if (n.fix !== undefined && n.status !== 'succeeded') lines.push(`fix: ${mrkdwn(n.fix)}`);
  for (const s of n.schemaChanges ?? [])
    lines.push(
      `${mrkdwn(s.sink)}: ${s.changes.map((c) => mrkdwn(c.change === 'added' ? `+${c.column} ${c.to}` : `${c.column} ${c.from ?? '?'}→${c.to}`)).join(', ')}`,
    );
  for (const c of (n.checks ?? []).filter((r) => !r.passed))
    lines.push(`check ${mrkdwn(c.name)} on ${mrkdwn(c.sink)}: ${mrkdwn(c.message)}`);
  lines.push(`run \`${mrkdwn(n.run)}\``);
  return { text: lines.join('\n') };
}

/** Text that is not sluice's markup, for Slack's mrkdwn: redacted first (a secret holding `&` is still found). */
function mrkdwn(text: string): string {
  return redact(text).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** `value` with every string, key and number that holds a secret redacted (a number holding one becomes `***`). */
function redactBody<T>(value: T): T {
  return redactValue(value) as T;
}

function redactValue(value: unknown): unknown {
  if (typeof value === 'string') return redact(value);
  if (typeof value === 'number' || typeof value === 'bigint') {
    const text = String(value);
    return redact(text) === text ? value : '***';
  }
  if (Array.isArray(value)) return value.map(redactValue);
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [redact(k), redactValue(v)]));
  return value;
}
