/**
 * The typed surface of the service client. Sources and the CLI are written against this interface;
 * the undici implementation lives beside it (one module per API area).
 */
import type { Readable } from 'node:stream';
import type { ServiceError } from './errors.js';
import type { BudgetPeers } from './shared-budget.js';
import type { ThrottleClock } from './throttle.js';

export interface ClientOptions {
  baseUrl: string;
  apiKey: string;
  /** The environment variable the key came from: a 401's fix line says to set it (default SLUICE_API_KEY). */
  apiKeyVariable?: string;
  /** Max sockets to the service (an undici Pool). Default 64. */
  connections?: number;
  /** ms; defaults: connect 10s, headers 180s (a search page may wait server-side up to 150 s), body idle 120s. */
  timeouts?: { connect?: number; headers?: number; body?: number };
  retry?: RetryOptions;
  /**
   * Told as each call starts (tracing, paid-call counts); the function it returns, if any, is told how the call
   * ended. Unset: nothing is measured.
   */
  onCall?: (call: {
    method: string;
    path: string;
    paid: boolean;
  }) => ((outcome: { status?: number; error?: unknown }) => void) | undefined;
  /** The 429 budget and slow start every request shares (throttle.ts); the defaults keep under the service's block. */
  throttle?: {
    /** 429s within five minutes at which the run stops (default 20; the service blocks at 25). */
    budget?: number;
    /** Requests in flight before the first answers (default 4). */
    initialWindow?: number;
    /** Test seam. */
    clock?: ThrottleClock;
    /** The other processes behind this address the budget is shared with (shards: shared-budget.ts). */
    peers?: BudgetPeers;
  };
  /**
   * The largest JSON answer (bytes) and the longest call (ms, request to last byte) accepted; defaults in
   * core/limits.ts. Past either, the call fails without retrying.
   */
  limits?: { maxAnswerBytes?: number; callTimeoutMs?: number };
  /** Called on each retry (for counters and logs); the message is already redacted. */
  onRetry?: (info: { attempt: number; delayMs: number; reason: string; method: string; path: string }) => void;
}

/** Told before a request is tried again: the error it failed with, and the wait the client is about to make. */
export interface RetryNotice {
  status: number;
  delayMs: number;
  reason: string;
  error: ServiceError;
}

export interface RetryOptions {
  /** Attempts after the first. Default 5. */
  retries?: number;
  /** First backoff in ms. Default 500. */
  baseDelayMs?: number;
  /** Cap of one wait, including Retry-After. Default 30_000. */
  maxDelayMs?: number;
}

/** A streamed download: the body is never buffered. */
export interface Download {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Readable;
}

/**
 * The per-snapshot vocabulary (`scheduled`, `building`, `ready`, `failed`), plus `canceled` (a job cut off by the
 * 5-minute limit, spelt as in the list endpoint's wider vocabulary); any other string is a state not finished yet.
 */
export type SnapshotStatus = 'scheduled' | 'building' | 'ready' | 'failed' | 'canceled' | (string & {});

export interface SnapshotMeta {
  id: string;
  status: SnapshotStatus;
  dataset_id?: string;
  created?: string;
  dataset_size?: number;
  file_size?: number;
  cost?: number;
  error?: string;
  error_code?: string;
  /** Other fields a failure's reason is read from (the vendor's CLI reads all of them). */
  error_message?: string;
  failure_reason?: string;
  message?: string;
  warning?: string;
  warning_code?: string;
}

/** One entry of `GET /datasets/snapshots` (docs/service.md §1.1); its status vocabulary is wider than `SnapshotStatus`. */
export interface SnapshotListItem {
  id: string;
  /** ISO 8601 creation time, on the service's clock. */
  created?: string;
  status?: string;
  dataset_id?: string;
  view_id?: string;
  dataset_size?: number;
}

export interface SnapshotList {
  snapshots: SnapshotListItem[];
  /**
   * The service's clock when it answered (its `Date` header, whole seconds), for comparing with `created`; undefined
   * when the header is missing or unreadable.
   */
  serviceTime?: Date;
}

export interface DownloadParams {
  format?: 'json' | 'jsonl' | 'csv';
  compress?: boolean;
  batch_size?: number;
  part?: number;
}

/**
 * How long a download (or a parts count) may wait out "not ready" answers — 202 "Snapshot is building", 400 "Snapshot
 * not ready", 400 "Snapshot is not ready" (docs/service.md §1.2–1.3).
 */
export interface DownloadWait {
  /** Milliseconds the answers may be waited out in all (the source's poll timeout); 0 or absent: not at all. */
  notReadyWaitMs?: number;
  /** First wait when the service gives no Retry-After (default 1000; it grows up to 30 s). */
  intervalMs?: number;
  signal?: AbortSignal;
  /** Told before each wait. */
  onNotReady?: (info: { attempt: number; delayMs: number; message: string }) => void;
}

export interface FilterRequest {
  dataset_id: string;
  filter: unknown;
  records_limit?: number;
  /** Uploaded filter-value files (multipart mode when present). */
  files?: { name: string; content: Buffer | string; contentType?: string }[];
}

export interface DatasetsApi {
  list(): Promise<{ id: string; name: string; size: number }[]>;
  metadata(datasetId: string): Promise<{
    id: string;
    fields: Record<string, { type: string; active?: boolean; required?: boolean; description?: string }>;
  }>;
  /** Paid: never retried unless the request provably never reached the server. */
  filter(req: FilterRequest): Promise<{ snapshot_id: string }>;
  snapshot(id: string): Promise<SnapshotMeta>;
  /**
   * Free: the snapshots of one dataset (`GET /datasets/snapshots?dataset_id=`), every status, unpaged. This is how a
   * filter call whose answer was lost is reconciled: the job it may have started shows up here.
   */
  snapshots(datasetId: string): Promise<SnapshotList>;
  /**
   * `{parts}`. A 400 "Snapshot is not ready" (while the snapshot builds, or its file after the status said ready) is
   * waited out within `wait.notReadyWaitMs`; after that → `NotReadyError`.
   */
  parts(id: string, params: Omit<DownloadParams, 'part'>, wait?: DownloadWait): Promise<{ parts: number }>;
  /**
   * A 200 body as a byte stream. "Not ready" in either form (202, or 400 "Snapshot not ready"; even after the
   * status said ready) is waited out and asked again within `wait.notReadyWaitMs`, Retry-After honoured; after
   * that → `NotReadyError`.
   */
  download(id: string, params: DownloadParams, wait?: DownloadWait): Promise<Download>;
}

export interface DeepLookupApi {
  createPreview(query: string): Promise<{ preview_id: string; columns: Record<string, unknown>[] }>;
  getPreview(previewId: string): Promise<{
    preview_id: string;
    query?: string;
    status: string;
    sample_data?: Record<string, unknown>[];
    columns?: unknown[];
    result_limit?: number;
  }>;
  /** Paid. */
  trigger(
    req: { preview_id: string; result_limit?: number } | { query: string; spec?: unknown; result_limit?: number },
  ): Promise<{ request_id: string; status: string; max_cost?: string }>;
  status(requestId: string): Promise<{
    request_id: string;
    status: string;
    progress?: number;
    matched_records?: number;
    result_limit?: number;
    [k: string]: unknown;
  }>;
  get(requestId: string): Promise<{
    request_id: string;
    status: string;
    total_cost?: string;
    columns?: { name: string; description?: string; type?: string }[];
    data?: Record<string, unknown>[];
    [k: string]: unknown;
  }>;
  /** `signal` cancels the download, its body included. */
  download(requestId: string, format: 'json' | 'csv', opts?: { signal?: AbortSignal }): Promise<Download>;
  /** Paid. */
  enrich(
    requestId: string,
    columns: { column_name: string; query: string }[],
  ): Promise<{ column_name: string; status: 'processing' | 'completed'; max_additional_cost: string }>;
  cancel(requestId: string): Promise<{ request_id: string; status: string; [k: string]: unknown }>;
}

export interface PageRequest {
  zone: string;
  url: string;
  format?: 'raw' | 'json';
}

export interface RequestApi {
  /**
   * `POST /request`, returning the target payload parsed as JSON (the `json` envelope is unwrapped).
   * An `x-brd-error` / `x-brd-err-code` header, a status of 400 or more in `x-brd-status-code`, or an empty 200 is a
   * ServiceError even on HTTP 200, with the real status; the service's code leads its message.
   */
  page(
    req: PageRequest,
    opts?: {
      signal?: AbortSignal;
      /** Called before each retry of this call (429/5xx/network), so a crawl's rate limiter can slow down on 429s. */
      onRetry?: (info: RetryNotice) => void;
    },
  ): Promise<{
    payload: unknown;
    bytes: number;
    /** When the service answered, on its clock (the answer's `Date`; this machine's only when it has none). */
    fetchedAt: Date;
  }>;
}

/** One bucket of `GET /zone/cost` (docs/service.md §7.2): `bw` and the request counts only where there was traffic. */
export interface ZoneCostBucket {
  cost: number;
  /** Bytes. */
  bw?: number;
  /** Search requests. */
  reqs_serp?: number;
  /** Unlocker requests. */
  reqs_unblocker?: number;
  range?: { from: string; to: string };
  [k: string]: unknown;
}

export interface ZonesApi {
  /** Account-changing: not retried. */
  create(body: { zone: { name: string; type: string }; plan: Record<string, unknown> }): Promise<unknown>;
  cost(zone: string, range?: { from: string; to: string }): Promise<Record<string, Record<string, ZoneCostBucket>>>;
  /** Account-changing: not retried. */
  refreshIps(body: {
    zone: string;
    ips?: string[];
    vips?: string[];
    country?: string;
    country_city?: string;
  }): Promise<unknown>;
  /** Account-changing: not retried. */
  removeDomain(body: { zone: string; type: 'whitelist' | 'blacklist'; domain: string }): Promise<unknown>;
  countries(): Promise<{ zone_types: Record<string, { country_codes: string[] }> }>;
  active(): Promise<{ name: string; type: string }[]>;
}

export interface ServiceClient {
  readonly baseUrl: string;
  /**
   * The retry timing of `service.retry` (first wait, longest wait), for a caller that retries above the client: a
   * crawl asks a page again after a 429 with these, waiting longer each time (core/retry.ts decides the waits).
   */
  readonly retryTiming: { baseMs: number; maxMs: number };
  /**
   * The client's one 429 budget (throttle.ts): answers of 429 — outright or in `x-brd-status-code` — within the last
   * five minutes, and over the client's life.
   */
  answers429(): { inWindow: number; total: number };
  /** The service's time now, as its latest answer's `Date` header tells it; undefined before its first answer. */
  serviceNow(): number | undefined;
  datasets: DatasetsApi;
  deepLookup: DeepLookupApi;
  request: RequestApi;
  zones: ZonesApi;
  close(): Promise<void>;
}
