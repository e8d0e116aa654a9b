/**
 * The metrics' memory between runs: `metrics.json` in the run's state directory (a shard's own directory for a
 * sharded run, so shards never add into each other's file), holding every counter's value since the pipeline's first
 * run with `metrics:` and the last success's and failure's times.
 *
 * Written whole under a temporary name and renamed over the file: a run killed at any moment leaves the last value
 * written, never a half file. The run saves before it reports (run-metrics.ts), so no value a scrape saw is ever
 * above what the next run restores: a counter never goes down across a kill.
 */
import { rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { readJsonFile } from '../../core/json-file.js';
import { PRIVATE_FILE } from '../../core/private-files.js';
import type { CounterSample } from './counters.js';

export const COUNTER_FILE = 'metrics.json';

export interface StoredMetrics {
  counters: CounterSample[];
  /** Seconds since the epoch. */
  lastSuccess?: number;
  lastFailure?: number;
}

const EMPTY: StoredMetrics = { counters: [] };

/**
 * What the last run left; none for a first run. A file that cannot be read or makes no sense is warned about by the
 * caller (`onBad`) and taken as none: the counters then start again from 0, which Prometheus reads as a reset.
 */
export async function readStoredMetrics(stateDir: string, onBad: (why: string) => void): Promise<StoredMetrics> {
  const file = path.join(stateDir, COUNTER_FILE);
  try {
    const raw = await readJsonFile(file, {
      absentIsNone: true,
      unreadable: (err) => new Error(`${file} cannot be read (${err.code ?? err.message})`),
      invalid: () => new Error(`${file} is not JSON`),
    });
    if (raw === undefined) return EMPTY;
    const parsed = fromJson(raw);
    if (!parsed) throw new Error(`${file} is not a metrics file of this version of sluice`);
    return parsed;
  } catch (err) {
    onBad(`${(err as Error).message}: the counters start again from 0`);
    return EMPTY;
  }
}

function fromJson(raw: unknown): StoredMetrics | undefined {
  if (typeof raw !== 'object' || raw === null) return undefined;
  const o = raw as Record<string, unknown>;
  if (o.version !== 1 || !Array.isArray(o.counters)) return undefined;
  const counters: CounterSample[] = [];
  for (const c of o.counters as unknown[]) {
    const s = c as Partial<CounterSample> | null;
    if (typeof s?.name !== 'string' || typeof s.value !== 'number' || typeof s.labels !== 'object' || !s.labels)
      return undefined;
    if (!Object.values(s.labels).every((v) => typeof v === 'string')) return undefined;
    counters.push({ name: s.name, labels: s.labels, value: s.value });
  }
  const time = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
  const lastSuccess = time(o.lastSuccess);
  const lastFailure = time(o.lastFailure);
  return {
    counters,
    ...(lastSuccess !== undefined && { lastSuccess }),
    ...(lastFailure !== undefined && { lastFailure }),
  };
}

/**
 * Saves the newest values given, one write at a time: values given while a write is out replace each other, and the
 * next write takes the newest (a run committing many small units writes as often as the disk allows, not once per
 * unit). `save` resolves once the values it was given (or newer ones) are on disk; a failed write is reported to
 * `onFailure` and the next save tries again.
 */
export class MetricsSaver {
  private chain: Promise<void> = Promise.resolve();
  private waiting: StoredMetrics | undefined;

  constructor(
    private readonly stateDir: string,
    private readonly onFailure: (err: unknown) => void,
  ) {}

  save(values: StoredMetrics): Promise<void> {
    const queued = this.waiting !== undefined;
    this.waiting = values;
    if (!queued)
      this.chain = this.chain.then(async () => {
        const next = this.waiting!;
        this.waiting = undefined;
        await writeStoredMetrics(this.stateDir, next).catch(this.onFailure);
      });
    return this.chain;
  }
}

async function writeStoredMetrics(stateDir: string, values: StoredMetrics): Promise<void> {
  const file = path.join(stateDir, COUNTER_FILE);
  // One run of a pipeline (of a shard) at a time holds the state directory: a fixed temporary name is enough.
  const tmp = `${file}.tmp`;
  await writeFile(tmp, JSON.stringify({ version: 1, ...values }) + '\n', { mode: PRIVATE_FILE });
  await rename(tmp, file);
}
