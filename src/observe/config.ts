/**
 * The pipeline file's `notify:` and `metrics:` blocks. URLs and tokens are meant to come from the environment
 * (`url: ${SLACK_WEBHOOK_URL}`); whatever their source, they are registered as secrets and never logged.
 */
import { z } from 'zod';
import { secretOption } from '../core/secret-option.js';
import { durationOption } from './duration.js';

/** What a webhook can be told. */
export const NOTIFY_EVENTS = ['failure', 'failure_budget', 'stall', 'schema_change', 'checks', 'success'] as const;
export type NotifyEvent = (typeof NOTIFY_EVENTS)[number];

/** Every event but `success`: a nightly load that worked needs no message. */
export const DEFAULT_NOTIFY_EVENTS: readonly NotifyEvent[] = NOTIFY_EVENTS.filter((e) => e !== 'success');

/** An http(s) URL a run sends to; `user:password@` in it is sent as HTTP basic auth. */
function outboundUrl(variable: string) {
  return z
    .string()
    .regex(/^https?:\/\/\S+$/, `an http(s) URL; take it from the environment: \${${variable}}`)
    .refine((u) => URL.canParse(u), { message: 'not a URL a request can be sent to (check the host and port)' });
}

export const webhookSchema = z
  .object({
    name: z.string().min(1).optional().describe('Names the webhook in logs (its URL never is). Default `webhook <n>`.'),
    url: secretOption(
      outboundUrl('SLACK_WEBHOOK_URL').describe(
        'Where to POST; take it from the environment: `${SLACK_WEBHOOK_URL}`. Never logged (messages show its host only). `https://user:password@host/…` is sent as HTTP basic auth.',
      ),
      'value',
    ),
    format: z
      .enum(['json', 'slack'])
      .default('json')
      .describe(
        '`json`: sluice’s own body (event, run id, pipeline, exit code, cause, fix, counts, checks). `slack`: `{"text": …}` for Slack and the chat tools that take its incoming-webhook format.',
      ),
    on: z
      .array(z.enum(NOTIFY_EVENTS))
      .min(1)
      .optional()
      .describe(
        'Events to send: `failure` (with the exit code, cause and fix), `failure_budget`, `stall`, `schema_change`, `checks` (a check failed or warned), `success`. Default: all but `success`.',
      ),
    headers: z
      .record(z.string(), z.string())
      .optional()
      .describe('Extra request headers, e.g. `Authorization: Bearer ${TOKEN}`; their values are never logged.'),
  })
  .strict()
  .refine(
    (w) => !(hasCredentials(w.url) && Object.keys(w.headers ?? {}).some((h) => h.toLowerCase() === 'authorization')),
    {
      message: 'the URL carries `user:password@` and `headers` an Authorization too: give the credentials once',
      path: ['url'],
    },
  );

function hasCredentials(url: string): boolean {
  if (!URL.canParse(url)) return false;
  const u = new URL(url);
  return u.username !== '' || u.password !== '';
}

export const notifySchema = z
  .object({
    webhooks: z.array(webhookSchema).min(1).describe('Webhooks to POST to.'),
    stall_after: durationOption(
      'Send `stall` once when no unit was committed for this long (e.g. "30m"). Default: no stall alert.',
    ).optional(),
    timeout: durationOption('Time allowed for one delivery attempt (default "5s").').optional(),
    retries: z
      .number()
      .int()
      .min(0)
      .max(5)
      .default(2)
      .describe('Attempts after the first on a network error, 429 or 5xx (default 2). A 4xx is never retried.'),
  })
  .strict()
  .describe(
    'Webhooks on failure, a spent failure budget, a stall, schema changes, checks and (optionally) success. A notification that cannot be delivered is logged and never fails or slows the load.',
  );

export type NotifyConfig = z.output<typeof notifySchema>;
export type WebhookConfig = z.output<typeof webhookSchema>;

export const metricsSchema = z
  .object({
    textfile: z
      .string()
      .min(1)
      .optional()
      .describe(
        "Write the metrics to this file for node_exporter's textfile collector (e.g. `/var/lib/node_exporter/textfile/sluice.prom`), relative to the pipeline file; replaced atomically at the end of the run and at each `interval`.",
      ),
    pushgateway: secretOption(
      outboundUrl('PUSHGATEWAY_URL')
        .optional()
        .describe(
          'Push the metrics to this Prometheus Pushgateway (`${PUSHGATEWAY_URL}`) at the end of the run and at each `interval`: a PUT of the group job `sluice`, pipeline and shard (the group replaced whole, so it holds exactly the textfile’s series). At most one push is out at a time (a push due meanwhile is skipped: the next carries the newest values); each waits 5 s for an answer. `https://user:password@host` is sent as HTTP basic auth; credentials and query values are never logged.',
        ),
      'connection',
    ),
    interval: durationOption('How often a long run reports its metrics while it runs (default "60s").').optional(),
  })
  .strict()
  .refine((m) => m.textfile !== undefined || m.pushgateway !== undefined, {
    message: 'give `textfile`, `pushgateway` or both',
  })
  .describe('Prometheus metrics of every run (duration, units, records per sink, retries, dead letters, checks…).');

export type MetricsConfig = z.output<typeof metricsSchema>;
