/**
 * `metrics:` as a run watcher: the run's metrics written as a textfile for node_exporter's textfile collector
 * and/or pushed to a Prometheus Pushgateway, at each `interval` while the run goes and once at its end. A report
 * that fails is a warning (once per destination while the run goes, and at the end): metrics never fail the load.
 *
 * The Pushgateway gets a POST (only the metrics pushed are replaced in the group), grouped by job `sluice`,
 * pipeline and shard: the last success's time survives a failed run's push. The textfile is replaced atomically
 * (written beside it, then renamed), carrying over the last success or failure it recorded.
 */
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { request } from 'undici';
import { registerSecret } from '../../core/redact.js';
import type { Logger } from '../../core/types.js';
import type { MetricsConfig } from '../config.js';
import { parseDuration } from '../duration.js';
import type { RunEnded, RunObserver, RunStarted, SinkSchemaChange } from '../events.js';
import { buildRegistry, LAST_FAILURE, LAST_SUCCESS, type MetricsSnapshot } from './registry.js';

const DEFAULT_INTERVAL_MS = 60_000;
const PUSH_TIMEOUT_MS = 5_000;

export class RunMetrics implements RunObserver {
  private started: RunStarted | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly schemaChanges: SinkSchemaChange[] = [];
  private previous: MetricsSnapshot['previous'];
  private readonly textfile: string | undefined;
  /** Destinations that failed while the run went: warned once each. */
  private readonly warned = new Set<string>();
  private reporting: Promise<void> = Promise.resolve();

  constructor(
    private readonly config: MetricsConfig,
    baseDir: string,
    private readonly log: Logger,
  ) {
    if (config.pushgateway !== undefined) registerSecret(config.pushgateway);
    this.textfile = config.textfile === undefined ? undefined : path.resolve(baseDir, config.textfile);
  }

  runStarted(e: RunStarted): void {
    this.started = e;
    const interval = this.config.interval === undefined ? DEFAULT_INTERVAL_MS : parseDuration(this.config.interval);
    this.timer = setInterval(() => void this.report(false), interval);
    this.timer.unref();
    if (this.textfile) this.reporting = readPrevious(this.textfile).then((p) => void (this.previous = p));
  }

  schemaChanged(e: SinkSchemaChange): void {
    this.schemaChanges.push(e);
  }

  async runEnded(e: RunEnded): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.report(true, {
      id: e,
      startedAt: e.startedAt,
      now: e.startedAt + e.durationMs,
      totals: e.totals,
      schemaChanges: e.schemaChanges,
      checks: e.checks,
      ended: { exitCode: e.exitCode, succeeded: e.outcome === 'succeeded' },
    });
  }

  /** One report at a time: a slow Pushgateway must not pile reports up. */
  private report(final: boolean, snapshot?: Omit<MetricsSnapshot, 'previous'>): Promise<void> {
    this.reporting = this.reporting.then(() => this.send(final, snapshot)).catch(() => undefined);
    return this.reporting;
  }

  private async send(final: boolean, ended?: Omit<MetricsSnapshot, 'previous'>): Promise<void> {
    const s = this.started;
    if (!s) return;
    const snapshot: MetricsSnapshot = {
      ...(ended ?? {
        id: s,
        startedAt: s.startedAt,
        now: Date.now(),
        totals: s.totals(),
        schemaChanges: this.schemaChanges,
        checks: [],
      }),
      ...(this.previous && { previous: this.previous }),
    };
    const registry = buildRegistry(snapshot);
    const text = await registry.metrics();
    const tries: Promise<void>[] = [];
    if (this.textfile)
      tries.push(this.attempt('the metrics textfile', final, () => writeTextfile(this.textfile!, text)));
    if (this.config.pushgateway !== undefined)
      tries.push(
        this.attempt('the Pushgateway', final, () => push(this.config.pushgateway!, s, text, registry.contentType)),
      );
    await Promise.all(tries);
  }

  private async attempt(what: string, final: boolean, fn: () => Promise<void>): Promise<void> {
    try {
      await fn();
    } catch (err) {
      if (final || !this.warned.has(what))
        this.log.warn(`could not report metrics to ${what}: ${(err as Error).message} (the run goes on)`);
      this.warned.add(what);
    }
  }
}

/** `<url>/metrics/job/sluice/pipeline/<p>[/shard/<i-of-n>]`; values in base64url, which may hold any character. */
export function pushUrl(base: string, id: { pipeline: string; shard?: string }): string {
  const b64 = (v: string): string => Buffer.from(v).toString('base64url') || '=';
  const groups = [
    ['job', 'sluice'],
    ['pipeline', id.pipeline],
    ...(id.shard !== undefined ? [['shard', id.shard]] : []),
  ];
  return `${base.replace(/\/+$/, '')}/metrics/${groups.map(([k, v]) => `${k}@base64/${b64(v!)}`).join('/')}`;
}

async function push(
  base: string,
  id: { pipeline: string; shard?: string },
  text: string,
  contentType: string,
): Promise<void> {
  const res = await request(pushUrl(base, id), {
    method: 'POST',
    headers: { 'content-type': contentType },
    body: text,
    signal: AbortSignal.timeout(PUSH_TIMEOUT_MS),
  });
  const answer = await res.body.text().catch(() => '');
  if (res.statusCode >= 300) throw new Error(`HTTP ${res.statusCode}: ${answer.trim().slice(0, 300)}`);
}

async function writeTextfile(file: string, text: string): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  // node_exporter reads only `*.prom`: the file being written is invisible to it until the rename.
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, text);
  await rename(tmp, file);
}

/** The last success and failure an earlier run wrote into the textfile. */
async function readPrevious(file: string): Promise<MetricsSnapshot['previous']> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    return undefined;
  }
  const value = (name: string): number | undefined => {
    const m = new RegExp(`^${name}(?:\\{[^}]*\\})?\\s+(\\S+)`, 'm').exec(text);
    return m ? Number(m[1]) : undefined;
  };
  const lastSuccess = value(LAST_SUCCESS);
  const lastFailure = value(LAST_FAILURE);
  return {
    ...(lastSuccess !== undefined && { lastSuccess }),
    ...(lastFailure !== undefined && { lastFailure }),
  };
}
