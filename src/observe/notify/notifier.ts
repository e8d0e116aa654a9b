/**
 * `notify:` as a run watcher: a stall alert while the run goes (once, when no unit was committed for `stall_after`),
 * and at the end the notices of how it ended, each to the webhooks that subscribed to its event. Deliveries run
 * beside the load (a stall) or after it (the end), never in its way; the end waits for them, bounded by the timeout
 * and retries, so a short-lived process does not exit with a notification half sent. A webhook that cannot be
 * reached is one warning per run, naming it and its address with the secrets masked, never its URL.
 */
import { registerSecret } from '../../core/redact.js';
import type { Logger } from '../../core/types.js';
import { DEFAULT_NOTIFY_EVENTS, type NotifyConfig, type WebhookConfig } from '../config.js';
import { parseDuration } from '../../core/duration.js';
import type { RunEnded, RunObserver, RunStarted } from '../events.js';
import { destination, type Destination } from '../outbound.js';
import { deliver } from './deliver.js';
import { endNotices, jsonBody, slackBody, stallNotice, type Notice } from './message.js';

const DEFAULT_TIMEOUT_MS = 5_000;

interface Webhook {
  config: WebhookConfig;
  label: string;
  to: Destination;
}

export class Notifier implements RunObserver {
  private started: RunStarted | undefined;
  private stallTimer: NodeJS.Timeout | undefined;
  private readonly stallMs: number | undefined;
  private readonly deliveries = new Set<Promise<unknown>>();
  private readonly webhooks: Webhook[];
  /** Webhooks already warned about in this run. */
  private readonly warned = new Set<Webhook>();

  constructor(
    private readonly config: NotifyConfig,
    private readonly log: Logger,
  ) {
    for (const w of config.webhooks) for (const v of Object.values(w.headers ?? {})) registerSecret(v);
    this.webhooks = config.webhooks.map((w, i) => ({
      config: w,
      label: webhookLabel(w, i),
      // A webhook's path is its credential (Slack's, Teams'): masked wherever it could show.
      to: destination(w.url, { secretPath: true }),
    }));
    this.stallMs = config.stall_after === undefined ? undefined : parseDuration(config.stall_after);
  }

  runStarted(e: RunStarted): void {
    this.started = e;
    if (this.stallMs === undefined) return;
    this.stallTimer = setTimeout(() => this.stalled(), this.stallMs);
    // A stall alert must not keep a finished process alive.
    this.stallTimer.unref();
  }

  unitCommitted(): void {
    // Restarts the countdown in place: cheaper than a new timer per commit.
    this.stallTimer?.refresh();
  }

  async runEnded(e: RunEnded): Promise<void> {
    this.stopTimer();
    for (const notice of endNotices(e)) this.send(notice);
    await Promise.all([...this.deliveries]);
  }

  private stalled(): void {
    // Once per run: a load stuck for hours is one alert, not one every `stall_after`.
    this.stopTimer();
    const s = this.started;
    if (!s) return;
    this.log.warn(`no unit committed for ${this.config.stall_after}: sending a stall notification`);
    this.send(stallNotice(s, s.totals(), this.stallMs!, this.config.stall_after!));
  }

  private stopTimer(): void {
    if (this.stallTimer) clearTimeout(this.stallTimer);
    this.stallTimer = undefined;
  }

  private send(notice: Notice): void {
    for (const w of this.webhooks) {
      if (!(w.config.on ?? DEFAULT_NOTIFY_EVENTS).includes(notice.event)) continue;
      const sent = deliver(
        {
          to: w.to,
          ...(w.config.headers && { headers: w.config.headers }),
          body: w.config.format === 'slack' ? slackBody(notice) : jsonBody(notice),
        },
        {
          timeoutMs: this.config.timeout === undefined ? DEFAULT_TIMEOUT_MS : parseDuration(this.config.timeout),
          retries: this.config.retries,
        },
      ).then((failure) => {
        if (failure === undefined || this.warned.has(w)) return;
        this.warned.add(w);
        this.log.warn(`notification (${notice.event}) to ${w.label} (${w.to.display}) ${failure}`);
      });
      this.deliveries.add(sent);
      void sent.finally(() => this.deliveries.delete(sent));
    }
  }
}

function webhookLabel(w: WebhookConfig, index: number): string {
  return w.name !== undefined ? `webhook "${w.name}"` : `notify.webhooks[${index}]`;
}
