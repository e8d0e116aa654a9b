/**
 * Where a deep-lookup preview, request or enrichment stands at an emulated instant. Nothing runs in the background:
 * every answer is computed from the job's start time and the emulated clock, so a test that scales time sees the
 * same sequence of states, only faster.
 *
 * A request is `queued` for 2 s, then `running` through the steps `identifying` (3 s), `generating_schema` (3 s)
 * and `generating` (10 s + 0.5 s per matched record, at most 20 min), during which its counters grow linearly, then
 * `completed` with step `done`. A failing request stops halfway through `generating`; a cancelled one freezes where
 * it was. A preview is `pending` for 1 s, `processing` until 4 s, then `completed` (or `failed`). An enrichment is
 * `processing` for 4 s + 20 ms per matched record (at most 10 min), then `completed`.
 */

export type RequestStatus = 'queued' | 'running' | 'completed' | 'failed' | 'cancelled';
export type RequestStep = 'identifying' | 'generating_schema' | 'generating' | 'done';
export type PreviewStatus = 'pending' | 'processing' | 'completed' | 'failed';

const QUEUED_MS = 2_000;
const IDENTIFY_MS = 3_000;
const SCHEMA_MS = 3_000;
const GENERATE_BASE_MS = 10_000;
const GENERATE_PER_RECORD_MS = 500;
const GENERATE_MAX_MS = 20 * 60_000;
const PREVIEW_PENDING_MS = 1_000;
const PREVIEW_DONE_MS = 4_000;
const ENRICH_BASE_MS = 4_000;
const ENRICH_PER_RECORD_MS = 20;
const ENRICH_MAX_MS = 10 * 60_000;

/** The final figures of a request and when it started (emulated epoch ms). */
export interface LookupJob {
  startedAt: number;
  matched: number;
  skipped: number;
  pagesConsidered: number;
  pagesRead: number;
  fails: boolean;
  cancelledAt?: number;
}

export interface JobView {
  status: RequestStatus;
  step: RequestStep;
  progress: number;
  /** Records collected so far (the first `matched` rows). */
  matched: number;
  skipped: number;
  pagesRead: number;
  pagesConsidered: number;
  /** The result schema exists: columns are known from step `generating` on. */
  hasSchema: boolean;
}

export function jobView(job: LookupJob, now: number): JobView {
  const at = job.cancelledAt === undefined ? now : Math.min(now, job.cancelledAt);
  const t = at - job.startedAt;
  const generateMs = Math.min(GENERATE_MAX_MS, GENERATE_BASE_MS + job.matched * GENERATE_PER_RECORD_MS);
  const generateStart = QUEUED_MS + IDENTIFY_MS + SCHEMA_MS;
  const end = generateStart + generateMs;
  const failAt = job.fails ? generateStart + generateMs / 2 : Infinity;
  const tt = Math.min(t, failAt);
  const f = clamp01((tt - generateStart) / generateMs);
  const part = (total: number): number => Math.floor(total * f);

  let status: RequestStatus;
  if (t >= failAt) status = 'failed';
  else if (t >= end) status = 'completed';
  else if (job.cancelledAt !== undefined && job.cancelledAt <= now) status = 'cancelled';
  else if (t < QUEUED_MS) status = 'queued';
  else status = 'running';

  let step: RequestStep;
  let progress: number;
  if (status === 'completed') {
    step = 'done';
    progress = 100;
  } else if (tt < QUEUED_MS + IDENTIFY_MS) {
    step = 'identifying';
    progress = Math.floor(5 * clamp01((tt - QUEUED_MS) / IDENTIFY_MS));
  } else if (tt < generateStart) {
    step = 'generating_schema';
    progress = 5 + Math.floor(5 * clamp01((tt - QUEUED_MS - IDENTIFY_MS) / SCHEMA_MS));
  } else {
    step = 'generating';
    progress = 10 + Math.floor(89 * f);
  }
  return {
    status,
    step,
    progress,
    matched: part(job.matched),
    skipped: part(job.skipped),
    pagesRead: part(job.pagesRead),
    pagesConsidered: part(job.pagesConsidered),
    hasSchema: tt >= generateStart,
  };
}

export function previewStatus(createdAt: number, fails: boolean, now: number): PreviewStatus {
  const t = now - createdAt;
  if (t < PREVIEW_PENDING_MS) return 'pending';
  if (t < PREVIEW_DONE_MS) return 'processing';
  return fails ? 'failed' : 'completed';
}

export function enrichmentCompleted(requestedAt: number, matched: number, now: number): boolean {
  return now - requestedAt >= Math.min(ENRICH_MAX_MS, ENRICH_BASE_MS + matched * ENRICH_PER_RECORD_MS);
}

function clamp01(x: number): number {
  return Math.max(0, Math.min(1, x));
}
