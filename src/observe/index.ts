/**
 * The watchers a run's pipeline and environment ask for: `notify:` (webhooks), `metrics:` (Prometheus) and, when
 * the standard `OTEL_*` variables name an endpoint, OpenTelemetry traces. Each is imported only when asked for: a
 * run with none of them configured loads none of their code (prom-client, the OpenTelemetry SDK).
 */
import type { Logger } from '../core/types.js';
import type { MetricsConfig, NotifyConfig } from './config.js';
import type { RunObserver } from './events.js';
import { tracingRequested, type Env } from './traces/enabled.js';

export { observeRun, type RunObserver, type RunTotals, type CheckResult } from './events.js';

export interface ObserveConfig {
  notify?: NotifyConfig;
  metrics?: MetricsConfig;
}

export async function startObservers(
  config: ObserveConfig,
  opts: { baseDir: string; log: Logger; env: Env },
): Promise<RunObserver[]> {
  const observers: RunObserver[] = [];
  if (config.notify) {
    const { Notifier } = await import('./notify/notifier.js');
    observers.push(new Notifier(config.notify, opts.log));
  }
  if (config.metrics) {
    const { RunMetrics } = await import('./metrics/run-metrics.js');
    observers.push(new RunMetrics(config.metrics, opts.baseDir, opts.log));
  }
  if (tracingRequested(opts.env)) {
    try {
      const { RunTracer } = await import('./traces/tracing.js');
      observers.push(new RunTracer(opts.env, opts.log));
    } catch (err) {
      opts.log.warn(`traces are not exported: ${(err as Error).message}`);
    }
  }
  return observers;
}
