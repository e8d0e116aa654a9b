/**
 * How the conformance scenarios drive sluice: pipelines written as files and run through the engine in this process
 * (`runPipeline`, as `sluice run` does), or as the real CLI in a child process when the run is to be killed with -9
 * at a failpoint (bench/lib/sluice-child.ts, the crash matrix's machinery); one emulator per test file, its clock
 * pinned to an emulated night and moved between runs, its counters telling what each run paid for.
 */
import { cpSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect } from 'vitest';
import { runKilledAt, type KilledRun } from '../../../bench/lib/sluice-child.js';
import type { ComponentDef } from '../../../src/contracts/component.js';
import { SluiceError } from '../../../src/core/errors.js';
import type { Logger, Sink, WorkUnit } from '../../../src/core/types.js';
import { startEmulator, type EmulatorHandle } from '../../../src/emulator/server.js';
import type { RunOptions, RunSummary } from '../../../src/operations/api.js';
import { runPipeline } from '../../../src/operations/run.js';
import type { RunHooks } from '../../../src/operations/run-hooks.js';
import { loadPipeline } from '../../../src/pipeline/load.js';
import { registry, type Registry } from '../../../src/pipeline/registry.js';
import type { CommitFailpoint, Output, Servers, Target } from './targets.js';
import { removeAfterFile } from '../../support/file-cleanup.js';

export const API_KEY = 'conformance-key-5d0c1e';
export const DAY = 86_400_000;
/** Half past an hour: records and reviews appear on whole hours, so none appears while a night's runs go on. */
export const NIGHT_1 = Date.parse('2025-03-01T02:30:00Z');

/** What the account paid for, from `GET /_emulator/counters`. */
export interface Counters {
  paid: Record<string, number>;
  requests: number;
  records_charged: number;
}

export interface Service {
  readonly emu: EmulatorHandle;
  /** Moves the emulated clock (records and reviews created before it become visible). */
  clock(at: number): Promise<void>;
  counters(): Promise<Counters>;
  /** Faults injected so far, by kind (`GET /_emulator/stats`). */
  faults(): Promise<Record<string, number>>;
}

/**
 * The file's emulator, started before its tests: a clock pinned at NIGHT_1, emulated time 20× faster (filter jobs
 * are quick, a night's runs stay inside its hour), `faults` when the file injects some.
 */
export function useService(opts: { size?: number; faults?: unknown; seed?: number } = {}): Service {
  const live = {} as { emu: EmulatorHandle };
  beforeAll(async () => {
    live.emu = await startEmulator({
      apiKey: API_KEY,
      size: opts.size ?? 300,
      seed: opts.seed ?? 1,
      timeScale: 20,
      jobSchedulingMs: 200,
      now: NIGHT_1,
      ...(opts.faults !== undefined && { faults: opts.faults }),
    });
  });
  afterAll(async () => {
    await live.emu?.close();
  });
  return {
    get emu() {
      return live.emu;
    },
    async clock(at) {
      const res = await fetch(`${live.emu.url}/_emulator/clock`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ now: new Date(at).toISOString() }),
      });
      expect(res.status).toBe(200);
    },
    counters: async () => (await (await fetch(`${live.emu.url}/_emulator/counters`)).json()) as Counters,
    faults: async () =>
      ((await (await fetch(`${live.emu.url}/_emulator/stats`)).json()) as { faults: Record<string, number> }).faults,
  };
}

/** A fresh directory for one scenario on one target: its pipeline files, local outputs and state. */
export function scenarioDir(tag: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), `sluice-conf-${tag}-`));
  removeAfterFile(dir, 'SLUICE_CONFORMANCE_KEEP');
  return dir;
}

/**
 * A copy of the scenario's directory (pipelines, state, local outputs, input files, timestamps kept) to go on in. A
 * DuckDB file an in-process run wrote stays open in this process (sinks/duckdb/database.ts), where a child that is to
 * be killed could not open it: the child works on the copy. Outputs on servers stay where they are.
 */
export function relocate(dir: string): string {
  const next = mkdtempSync(`${dir.replace(/-[^-]*$/, '')}-`);
  removeAfterFile(next, 'SLUICE_CONFORMANCE_KEEP');
  cpSync(dir, next, { recursive: true, preserveTimestamps: true });
  return next;
}

let outputs = 0;
/** One output of `target` in `dir`: a name no other output of the run has (tables share one database). */
export function output(dir: string, target: Target, servers: Servers, what: string): Output {
  return { dir, name: `${what}_${target.name.replace(/-/g, '_')}_${++outputs}`, servers };
}

export interface PipelineSpec {
  name: string;
  source: Record<string, unknown>;
  transforms?: Record<string, unknown>[];
  sinks: Record<string, unknown>[];
  /** Other top-level keys (max_dead_letters, …). */
  extra?: Record<string, unknown>;
}

/** Writes the pipeline (JSON is YAML) into `dir`; returns its path. */
export function writePipeline(dir: string, service: Service | undefined, spec: PipelineSpec): string {
  const file = path.join(dir, `${spec.name}.yaml`);
  mkdirSync(dir, { recursive: true });
  const doc = {
    version: 1,
    name: spec.name,
    service: {
      base_url: service ? service.emu.url : 'emulator',
      api_key: '${SLUICE_API_KEY}',
      retry: { retries: 8, base_delay_ms: 5, max_delay_ms: 100 },
    },
    source: spec.source,
    ...(spec.transforms && { transforms: spec.transforms }),
    sinks: spec.sinks,
    ...spec.extra,
  };
  writeFileSync(file, JSON.stringify(doc, null, 2) + '\n');
  return file;
}

const ENV = (): Record<string, string | undefined> => ({ ...process.env, SLUICE_API_KEY: API_KEY });

/** Log lines of a run, for the assertion that failed. */
export interface RecordingLogger extends Logger {
  lines: string[];
}

export function recordingLogger(): RecordingLogger {
  const lines: string[] = [];
  const at =
    (level: string) =>
    (msg: string): void =>
      void lines.push(`${level}: ${msg}`);
  return { lines, debug: () => undefined, info: at('info'), warn: at('warn'), error: at('error') };
}

export interface InProcessRun {
  summary?: RunSummary;
  error?: unknown;
  log: string[];
}

/** `sluice run <file>` through the engine in this process; never throws (the outcome says how it ended). */
export async function runHere(
  file: string,
  opts: Partial<RunOptions> = {},
  hooks: Omit<RunHooks, 'log'> = {},
): Promise<InProcessRun> {
  const log = recordingLogger();
  try {
    const p = await loadPipeline(file, ENV());
    const summary = await runPipeline(
      p,
      { fresh: false, logFormat: 'text', quiet: true, progress: false, ...opts },
      { ...hooks, log },
    );
    return { summary, log: log.lines };
  } catch (error) {
    return { error, log: log.lines };
  }
}

/** `runHere` that must succeed. */
export async function runOk(file: string, opts: Partial<RunOptions> = {}, hooks: Omit<RunHooks, 'log'> = {}) {
  const r = await runHere(file, opts, hooks);
  if (r.error !== undefined)
    throw new Error(`run of ${path.basename(file)} failed: ${String(r.error)}\n${r.log.join('\n')}`, {
      cause: r.error,
    });
  return r.summary!;
}

/** `sluice run <file>` in a child process that dies by SIGKILL at `failpoint`. */
export function runKilled(file: string, failpoint: CommitFailpoint): Promise<KilledRun> {
  return runKilledAt(file, failpoint, { SLUICE_API_KEY: API_KEY });
}

/** A sink that is to break mid-run: the sink of `type` whose config names `output`, at its `failAt`-th unit. */
export interface Breakage {
  type: string;
  output: string;
  failAt: number;
}

/**
 * The registry, with each sink of `breakages` refusing a unit (a full disk, a revoked grant). Not transient: the run
 * fails, and starts no more units. The refusal sticks to its unit, as a full disk would: when the same attempt also
 * failed for a transient cause (a download cut short by the service's faults), the unit's next attempt is refused
 * again, rather than the retry passing and the run succeeding without the breakage it was to show.
 */
export function failingRegistry(breakages: readonly Breakage[]): Registry {
  const wrap = (real: ComponentDef<'sink'>): ComponentDef<'sink'> => ({
    ...real,
    create(config, deps) {
      const sink = real.create(config, deps) as Sink;
      const breakage = breakages.find((b) => b.type === real.type && JSON.stringify(config).includes(b.output));
      if (!breakage) return sink;
      let calls = 0;
      let refused: string | undefined;
      const refuse = (): never => {
        throw new SluiceError(`${sink.describe()}: no space left on device`, { hint: 'free some space' });
      };
      return new Proxy(sink, {
        get(target, prop, receiver) {
          const value = Reflect.get(target, prop, receiver) as unknown;
          if (typeof value !== 'function') return value;
          if (prop === 'writeUnit' || prop === 'writeUnitFile')
            return (...args: unknown[]) => {
              const unitId = (args[0] as WorkUnit).id;
              if (unitId === refused || (refused === undefined && ++calls === breakage.failAt)) {
                refused = unitId;
                return refuse();
              }
              return value.apply(target, args);
            };
          return value.bind(target);
        },
      });
    },
  });
  return { ...registry, sink: registry.sink.map(wrap) };
}
