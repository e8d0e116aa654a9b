/**
 * The pipeline's connection to the service: the real one, or (base_url `emulator`) the embedded emulator started
 * in-process on a random port. Created lazily, so pipelines that never call the service (file sources) start no
 * server, and `plan` of a snapshot with a known id makes only free calls. The emulator's code (most of the
 * repository) is imported only when `base_url: emulator` asks for it, so runs against the real service and every
 * other command start without it.
 */
import path from 'node:path';
import type { ClientOptions } from '../client/api.js';
import { FileBudgetPeers, createClient, type ServiceClient } from '../client/index.js';
import { SERVICE_WINDOW_MS } from '../client/throttle.js';
import { ConfigError, SluiceError } from '../core/errors.js';
import { registerSecret } from '../core/redact.js';
import type { Limits } from '../core/limits.js';
import type { Logger } from '../core/types.js';
import type { EmulatorHandle } from '../emulator/server.js';

export interface ServiceConfig {
  base_url: string;
  api_key: string;
  /** The environment variable `api_key` was read from (`${SLUICE_APIKEY}`), set by the loader: the 401 fix names it. */
  api_key_variable?: string;
  connections?: number;
  timeouts?: { connect?: number; headers?: number; body?: number };
  retry?: { retries?: number; base_delay_ms?: number; max_delay_ms?: number };
  emulator?: {
    seed?: number;
    size?: number;
    time_scale?: number;
    faults?: string;
    latency_ms?: number;
    now?: string;
  };
}

export interface RetryCounter {
  retries: number;
}

export interface ServiceConnectionOptions {
  /**
   * Where the embedded emulator keeps its snapshots, requests and paid counters between runs (beside the
   * pipeline's run state), so a run interrupted in the quick start resumes with the jobs it saved. Unused for a
   * real service; without it the embedded emulator starts empty every time.
   */
  emulatorStateFile?: string;
  /** Told of every call to the service (ClientOptions.onCall): traces and paid-call counts. */
  onCall?: ClientOptions['onCall'];
  /** The pipeline's bounds on answers (`limits:`, core/limits.ts); the client's defaults when absent. */
  limits?: Pick<Limits, 'maxAnswerBytes' | 'callTimeoutMs'>;
  /**
   * A shard's share of the 429 budget: the directory the pipeline's shards share (its root state directory's
   * `service-budget/`), this shard's name there and its place among them (client/shared-budget.ts).
   */
  sharedBudget?: { dir: string; self: string; shards: readonly string[] };
}

export class ServiceConnection {
  private client: Promise<ServiceClient> | undefined;
  /** The client once created: its answers set the service's clock (`now`). */
  private ready: ServiceClient | undefined;
  private emulator: EmulatorHandle | undefined;

  /** `config` is undefined for a pipeline without a `service` block (a `file` source): nothing may call the service. */
  constructor(
    private readonly config: ServiceConfig | undefined,
    private readonly baseDir: string,
    private readonly log: Logger,
    private readonly counter: RetryCounter,
    private readonly options: ServiceConnectionOptions = {},
  ) {
    if (config !== undefined) registerSecret(config.api_key);
  }

  get(): Promise<ServiceClient> {
    this.client ??= this.create().then((c) => (this.ready = c));
    return this.client;
  }

  /**
   * The run's clock: the service's, as its latest answer's `Date` header tells it (an emulator's moved clock on
   * emulated nights; the real service's whatever this machine's clock says), and this machine's only until the
   * service has answered. Sources take "now" from here (`SourceContext.now`).
   */
  now(): number {
    return this.ready?.serviceNow() ?? Date.now();
  }

  /** The embedded emulator, when one was started (tests read its counters). */
  get embedded(): EmulatorHandle | undefined {
    return this.emulator;
  }

  private async create(): Promise<ServiceClient> {
    const config = this.config;
    // The loader refuses a pipeline whose source calls the service without a `service` block; this is the backstop.
    if (config === undefined)
      throw new SluiceError('the pipeline has no `service` block, but a component asked for the service', {
        hint: 'add `service: { base_url: …, api_key: ${SLUICE_API_KEY} }` to the pipeline file',
      });
    let baseUrl = config.base_url;
    if (baseUrl === 'emulator') {
      const e = config.emulator ?? {};
      const { EmulatorStateError, loadFaultsFile, startEmulator } = await import('../emulator/server.js');
      const stateFile = this.options.emulatorStateFile;
      this.emulator = await startEmulator({
        apiKey: config.api_key,
        ...(stateFile !== undefined && { stateFile }),
        ...(e.seed !== undefined && { seed: e.seed }),
        ...(e.size !== undefined && { size: e.size }),
        ...(e.time_scale !== undefined && { timeScale: e.time_scale }),
        ...(e.now !== undefined && { now: Date.parse(e.now) }),
        ...(e.latency_ms !== undefined && { latencyMs: e.latency_ms }),
        ...(e.faults !== undefined && { faults: faultsOf(path.resolve(this.baseDir, e.faults), loadFaultsFile) }),
      }).catch((err: unknown) => {
        throw err instanceof EmulatorStateError && stateFile !== undefined ? embeddedStateError(err, stateFile) : err;
      });
      baseUrl = this.emulator.url;
      this.log.info(`embedded emulator listening on ${baseUrl}`);
      if (this.emulator.resumed) this.log.info(`resumed the embedded emulator's state from ${stateFile}`);
    }
    const r = config.retry ?? {};
    return createClient({
      baseUrl,
      apiKey: config.api_key,
      ...(config.api_key_variable !== undefined && { apiKeyVariable: config.api_key_variable }),
      ...(config.connections !== undefined && { connections: config.connections }),
      ...(config.timeouts !== undefined && { timeouts: config.timeouts }),
      ...(this.options.limits !== undefined && {
        limits: {
          maxAnswerBytes: this.options.limits.maxAnswerBytes,
          callTimeoutMs: this.options.limits.callTimeoutMs,
        },
      }),
      retry: {
        ...(r.retries !== undefined && { retries: r.retries }),
        ...(r.base_delay_ms !== undefined && { baseDelayMs: r.base_delay_ms }),
        ...(r.max_delay_ms !== undefined && { maxDelayMs: r.max_delay_ms }),
      },
      ...(this.options.onCall && { onCall: this.options.onCall }),
      ...(this.options.sharedBudget && { throttle: { peers: this.budgetPeers(this.options.sharedBudget) } }),
      onRetry: (info) => {
        this.counter.retries++;
        this.log.warn(`retrying ${info.method} ${info.path} in ${Math.round(info.delayMs)} ms: ${info.reason}`, {
          attempt: info.attempt,
        });
      },
    });
  }

  private budgetPeers(b: NonNullable<ServiceConnectionOptions['sharedBudget']>): FileBudgetPeers {
    try {
      return new FileBudgetPeers(b.dir, b.self, b.shards, this.log, Date.now(), SERVICE_WINDOW_MS);
    } catch (err) {
      throw new SluiceError(
        `cannot share the 429 budget with the other shards through ${b.dir}: ${(err as Error).message}`,
        {
          hint: 'the shards of a pipeline share its state directory: give the user running sluice write access to it',
          cause: err,
        },
      );
    }
  }

  async close(): Promise<void> {
    if (this.client) await (await this.client.catch(() => undefined))?.close();
    await this.emulator?.close();
  }
}

/**
 * The emulator's own hint speaks of its command line; the embedded one is configured by `service.emulator`, and its
 * state file is sluice's to delete (the run's saved jobs are then unknown, which `resume.on_missing_job` handles).
 */
function embeddedStateError(err: SluiceError, file: string): SluiceError {
  return new SluiceError(err.message, {
    hint:
      `restore service.emulator's earlier settings, or delete ${file} to start the embedded emulator empty ` +
      '(jobs an unfinished run saved are then unknown to it: see resume.on_missing_job, or run with --fresh)',
    cause: err,
  });
}

/** The pipeline's `service.emulator.faults` file; a problem inside it keeps the loader's file:line:column error. */
function faultsOf(file: string, loadFaultsFile: (file: string) => unknown): unknown {
  try {
    return loadFaultsFile(file);
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    const code = ((err as { cause?: NodeJS.ErrnoException }).cause?.code ?? 'error') as string;
    throw new SluiceError(`service.emulator.faults: cannot read ${file} (${code})`, {
      hint: 'the path is relative to the pipeline file: fix it, or remove `faults` to run the emulator without faults',
      cause: err,
    });
  }
}
