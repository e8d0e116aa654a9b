/**
 * `metrics:` as a run watcher: the run's metrics written as a textfile for node_exporter's textfile collector
 * and/or pushed to a Prometheus Pushgateway, at each `interval` while the run goes and once at its end. A report
 * that fails is one warning per run and destination (naming it, secrets masked, and why): metrics never fail the load.
 *
 * The counters are the pipeline's since its first run (counters.ts): restored from the state directory when the run
 * starts and saved there after every commit, before every report and once more while the run still holds its state
 * directory (`runEnding`). Saved before reported, so a run killed at any point never left a scraped value higher than
 * the one the next run restores.
 *
 * Each destination has at most one report out at a time: a report due while the previous one is still out is
 * skipped (the next one carries the newest values), so a Pushgateway that never answers costs one pending request,
 * not one per interval. Every report is bounded by REPORT_TIMEOUT_MS; the last one abandons a report still out and
 * gets the same bound, so the process exits within seconds of the run's end whatever the gateway does.
 *
 * The Pushgateway gets a PUT, grouped by job `sluice`, pipeline and shard: the group is replaced whole, so it holds
 * exactly the series of the textfile (a metric sluice no longer exports does not linger there). The last success's
 * and failure's times come from the state directory, so a failed run's push still carries the last success. The
 * textfile is replaced atomically (written beside it under a name unique across hosts, then renamed). A sharded run
 * writes a textfile of its own per shard (`sluice.prom` → `sluice.shard-1-of-4.prom`), so shards on one host never
 * overwrite each other's series.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import path from 'node:path';
import type { Logger } from '../../core/types.js';
import type { MetricsConfig } from '../config.js';
import { parseDuration } from '../../core/duration.js';
import type { RunEnded, RunObserver, RunStarted, SinkSchemaChange } from '../events.js';
import { answerExcerpt, destination, put, withPath, type Destination } from '../outbound.js';
import { MetricsSaver, readStoredMetrics, type StoredMetrics } from './counter-store.js';
import { atLeast, runCounters, stillExported, sum, type RunCounts } from './counters.js';
import { buildRegistry, LAST_FAILURE, LAST_SUCCESS, type MetricsSnapshot } from './registry.js';

const DEFAULT_INTERVAL_MS = 60_000;
/** How long one report may take, the last one included. */
export const REPORT_TIMEOUT_MS = 5_000;

interface Report {
  text: string;
  contentType: string;
}

/** One destination of the reports, with the report it has out (if any). */
interface Channel {
  /** For the warning: `the Pushgateway http://gw:9091/?token=***`. */
  what: string;
  send(report: Report, abandon: AbortSignal): Promise<void>;
  out?: { done: Promise<void>; abandon: AbortController };
}

export class RunMetrics implements RunObserver {
  private started: RunStarted | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly schemaChanges: SinkSchemaChange[] = [];
  /** What earlier runs left (the state directory's metrics.json, or the textfile's times). */
  private restored: Promise<StoredMetrics> = Promise.resolve({ counters: [] });
  private saver: MetricsSaver | undefined;
  /** The values last saved: what is reported, and what no later value may be below. */
  private saved: StoredMetrics = { counters: [] };
  /** The run's final values, saved while it held its state directory. */
  private final: StoredMetrics | undefined;
  private channels: Channel[] = [];
  private readonly gateway: Destination | undefined;
  /** Destinations already warned about in this run. */
  private readonly warned = new Set<Channel | string>();
  private ended = false;

  constructor(
    private readonly config: MetricsConfig,
    private readonly baseDir: string,
    private readonly log: Logger,
  ) {
    this.gateway = config.pushgateway === undefined ? undefined : destination(config.pushgateway);
  }

  runStarted(e: RunStarted): void {
    this.started = e;
    const stateDir = e.stateDir;
    this.saver = new MetricsSaver(stateDir, (err) => this.warnOnce('save', savingFailed(stateDir, err)));
    const fromState = readStoredMetrics(stateDir, (why) => this.log.warn(`metrics: ${why}`));
    let textfile: string | undefined;
    if (this.config.textfile !== undefined) {
      const file = shardTextfile(path.resolve(this.baseDir, this.config.textfile), e.shard);
      textfile = file;
      this.channels.push({
        what: `the metrics textfile ${file}`,
        send: (r, abandon) => writeTextfile(file, r, abandon),
      });
    }
    this.restored = restore(fromState, textfile, e.sinks);
    if (this.gateway) {
      const to = withPath(this.gateway, groupPath(e));
      this.channels.push({
        what: `the Pushgateway ${this.gateway.display}`,
        send: (r, abandon) => push(to, r, abandon),
      });
    }
    const interval = this.config.interval === undefined ? DEFAULT_INTERVAL_MS : parseDuration(this.config.interval);
    this.timer = setInterval(() => void this.tick(), interval);
    this.timer.unref();
  }

  /** Each commit is saved (coalesced): a run killed after it restores its records in the next run's counters. */
  unitCommitted(): void {
    const s = this.started;
    if (s && !this.ended) void this.save(this.live(s));
  }

  schemaChanged(e: SinkSchemaChange): void {
    this.schemaChanges.push(e);
  }

  /** Under the run's lock: the final counters and times saved for the next run. */
  async runEnding(e: RunEnded): Promise<void> {
    this.final = await this.save(await this.finalValues(e));
  }

  async runEnded(e: RunEnded): Promise<void> {
    this.ended = true;
    if (this.timer) clearInterval(this.timer);
    // The last report carries the newest values: one still out is abandoned, not waited for.
    for (const c of this.channels) c.out?.abandon.abort();
    await Promise.all(this.channels.map((c) => c.out?.done));
    // Told `runEnding` first by the engine; a caller that did not is saved for here.
    const values = this.final ?? (await this.save(await this.finalValues(e)));
    const report = await render({
      id: e,
      startedAt: e.startedAt,
      now: e.startedAt + e.durationMs,
      exitCode: e.exitCode,
      ...values,
    });
    await Promise.all(this.channels.map((c) => this.start(c, report)));
  }

  /** A report while the run goes, to each destination that has none out: saved first, then reported. */
  private async tick(): Promise<void> {
    const s = this.started;
    const idle = this.channels.filter((c) => !c.out);
    if (!s || this.ended || idle.length === 0) return;
    const values = await this.save(this.live(s));
    const report = await render({ id: s, startedAt: s.startedAt, now: Date.now(), ...values });
    if (!this.ended) for (const c of idle) if (!c.out) void this.start(c, report);
  }

  private live(s: RunStarted): RunCounts {
    return { totals: s.totals(), schemaChanges: this.schemaChanges, checks: [] };
  }

  private async finalValues(e: RunEnded): Promise<StoredMetrics & { run: RunCounts }> {
    const run = { totals: e.totals, schemaChanges: e.schemaChanges, checks: e.checks, outcome: e.outcome };
    const now = (e.startedAt + e.durationMs) / 1000;
    const restored = await this.restored;
    const lastSuccess = e.outcome === 'succeeded' ? now : restored.lastSuccess;
    const lastFailure = e.outcome === 'failed' ? now : restored.lastFailure;
    return {
      run,
      counters: [],
      ...(lastSuccess !== undefined && { lastSuccess }),
      ...(lastFailure !== undefined && { lastFailure }),
    };
  }

  /**
   * The restored counters plus the run's counts (never below what was saved before), saved; resolves to what was
   * saved once it is on disk (or its write failed and was warned about).
   */
  private async save(v: RunCounts | (StoredMetrics & { run: RunCounts })): Promise<StoredMetrics> {
    const restored = await this.restored;
    const run = 'run' in v ? v.run : v;
    const times = 'run' in v ? v : restored;
    const values: StoredMetrics = {
      counters: atLeast(this.saved.counters, sum(restored.counters, runCounters(run))),
      ...(times.lastSuccess !== undefined && { lastSuccess: times.lastSuccess }),
      ...(times.lastFailure !== undefined && { lastFailure: times.lastFailure }),
    };
    this.saved = values;
    await this.saver?.save(values);
    return values;
  }

  private start(c: Channel, report: Report): Promise<void> {
    const abandon = new AbortController();
    const done: Promise<void> = c.send(report, abandon.signal).then(
      () => undefined,
      (err: unknown) => {
        if (!abandon.signal.aborted)
          this.warnOnce(c, `could not report metrics to ${c.what}: ${(err as Error)?.message ?? String(err)}`);
      },
    );
    const out = { done, abandon };
    c.out = out;
    void done.finally(() => {
      if (c.out === out) c.out = undefined;
    });
    return done;
  }

  private warnOnce(what: Channel | string, message: string): void {
    if (this.warned.has(what)) return;
    this.warned.add(what);
    this.log.warn(`${message} (warned once per run; the run goes on)`);
  }
}

async function render(snapshot: MetricsSnapshot): Promise<Report> {
  const registry = buildRegistry(snapshot);
  return { text: await registry.metrics(), contentType: registry.contentType };
}

function savingFailed(stateDir: string, err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  return `could not save the metrics' counters in ${stateDir}: ${e?.code ?? e?.message ?? String(err)}; the next run's counters may restart from an earlier value`;
}

/**
 * What the state directory kept; the series of sinks the pipeline still has. A pipeline that exported metrics before
 * the state directory kept them has its last success's and failure's times in its textfile only: taken from there.
 */
async function restore(
  fromState: Promise<StoredMetrics>,
  textfile: string | undefined,
  sinks: readonly string[],
): Promise<StoredMetrics> {
  const stored = await fromState;
  const counters = stillExported(stored.counters, sinks);
  if (stored.lastSuccess !== undefined || stored.lastFailure !== undefined || textfile === undefined)
    return { ...stored, counters };
  return { counters, ...(await readTextfileTimes(textfile)) };
}

/** `/metrics/job@base64/…/pipeline@base64/…[/shard@base64/…]`: values in base64url, which may hold any character. */
export function groupPath(id: { pipeline: string; shard?: string }): string {
  const b64 = (v: string): string => Buffer.from(v).toString('base64url') || '=';
  const groups = [
    ['job', 'sluice'],
    ['pipeline', id.pipeline],
    ...(id.shard !== undefined ? [['shard', id.shard]] : []),
  ];
  return `/metrics/${groups.map(([k, v]) => `${k}@base64/${b64(v!)}`).join('/')}`;
}

/** The textfile of a shard (`2/4`): `sluice.prom` → `sluice.shard-2-of-4.prom`; an unsharded run's is as configured. */
export function shardTextfile(file: string, shard: string | undefined): string {
  if (shard === undefined) return file;
  const tag = `shard-${shard.replace('/', '-of-')}`;
  const ext = path.extname(file);
  return ext ? `${file.slice(0, -ext.length)}.${tag}${ext}` : `${file}.${tag}`;
}

async function push(to: Destination, report: Report, abandon: AbortSignal): Promise<void> {
  const answer = await put(to, {
    headers: { 'content-type': report.contentType },
    body: report.text,
    timeoutMs: REPORT_TIMEOUT_MS,
    signal: abandon,
  });
  if (answer.status >= 300) {
    const excerpt = answerExcerpt(answer.text);
    throw new Error(`HTTP ${answer.status}${excerpt ? `: ${excerpt}` : ''}`);
  }
}

/**
 * node_exporter reads only `*.prom`: the file being written is invisible to it until the rename. The temporary name
 * carries the host, the pid and a random part: shards in pods on one hostPath may share a pid, never all three.
 */
async function writeTextfile(file: string, report: Report, abandon: AbortSignal): Promise<void> {
  const host = hostname().replace(/[^A-Za-z0-9.-]/g, '_');
  const tmp = `${file}.${host}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  const signal = AbortSignal.any([abandon, AbortSignal.timeout(REPORT_TIMEOUT_MS)]);
  try {
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(tmp, report.text, { signal });
    await rename(tmp, file);
  } catch (err) {
    await rm(tmp, { force: true }).catch(() => undefined);
    throw err;
  }
}

/** The last success and failure an earlier run wrote into the textfile. */
async function readTextfileTimes(file: string): Promise<Pick<StoredMetrics, 'lastSuccess' | 'lastFailure'>> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    return {};
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
