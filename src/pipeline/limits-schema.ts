/**
 * The pipeline's `limits:` block: bounds on what answers from the network may cost (src/core/limits.ts, where each
 * default is explained). Every option is optional; `pipelineLimits` fills in the defaults.
 */
import { z } from 'zod';
import { BYTE_SIZE, DEFAULT_LIMITS, byteSize, formatBytes, interruptGraceMs, type Limits } from '../core/limits.js';

const size = (what: string, dflt: number) =>
  z
    .union([
      z.number().int().positive(),
      z.string().regex(BYTE_SIZE, 'a size such as 16777216, "16MiB", "500MB" or "2GiB"'),
    ])
    .optional()
    .describe(`${what} Bytes, or a size such as "16MiB" (default ${formatBytes(dflt)}).`);

const seconds = (what: string, dfltMs: number) =>
  z
    .number()
    .positive()
    .optional()
    .describe(`${what} In seconds (default ${dfltMs / 1000}).`);

export const limitsSchema = z
  .object({
    max_record_bytes: size(
      'A record (JSONL line, JSON array element, CSV record) larger than this is dead-lettered unread, with its position.',
      DEFAULT_LIMITS.maxRecordBytes,
    ),
    max_answer_bytes: size(
      'A JSON answer of the service (metadata, status, a search page, deep lookup rows) larger than this fails the call.',
      DEFAULT_LIMITS.maxAnswerBytes,
    ),
    max_unit_bytes: size(
      "A unit's download (a snapshot part, a deep lookup download) may inflate to this many bytes; past it the unit fails.",
      DEFAULT_LIMITS.maxUnitBytes,
    ),
    max_inflate_ratio: z
      .number()
      .min(1)
      .optional()
      .describe(
        `A gzip body may inflate this many times its compressed size; past it (a gzip bomb) the unit fails (default ${DEFAULT_LIMITS.maxInflateRatio}).`,
      ),
    records_margin: z
      .number()
      .min(0)
      .optional()
      .describe(
        `A unit may hold this fraction more records than the service announced (a snapshot part's batch_size, a deep lookup's matched_records); past it the unit fails (default ${DEFAULT_LIMITS.recordsMargin}).`,
      ),
    unit_timeout_s: seconds(
      'One attempt at a unit, download to commit, may take this long; past it the unit fails (a drip-fed body). Not for local files.',
      DEFAULT_LIMITS.unitTimeoutMs,
    ),
    call_timeout_s: seconds(
      "One call to the service, request to the answer's last byte, may take this long; past it the call fails.",
      DEFAULT_LIMITS.callTimeoutMs,
    ),
    interrupt_grace_s: seconds(
      'After SIGINT/SIGTERM the run exits within this: units in flight may commit until 5 s before its end (a fifth of it when shorter), then their reads are aborted. A second signal exits at once.',
      DEFAULT_LIMITS.interruptGraceMs,
    ),
  })
  .strict()
  .describe('Bounds on the memory, disk and time answers from the network may cost; every one has a default.');

export type LimitsConfig = z.output<typeof limitsSchema>;

/** The `limits:` block over the defaults. */
export function pipelineLimits(cfg: LimitsConfig | undefined): Limits {
  const c = cfg ?? {};
  const ms = (s: number | undefined, dflt: number): number => (s === undefined ? dflt : Math.round(s * 1000));
  const bytes = (v: number | string | undefined, dflt: number): number => (v === undefined ? dflt : byteSize(v));
  return {
    maxRecordBytes: bytes(c.max_record_bytes, DEFAULT_LIMITS.maxRecordBytes),
    maxAnswerBytes: bytes(c.max_answer_bytes, DEFAULT_LIMITS.maxAnswerBytes),
    maxUnitBytes: bytes(c.max_unit_bytes, DEFAULT_LIMITS.maxUnitBytes),
    maxInflateRatio: c.max_inflate_ratio ?? DEFAULT_LIMITS.maxInflateRatio,
    recordsMargin: c.records_margin ?? DEFAULT_LIMITS.recordsMargin,
    unitTimeoutMs: ms(c.unit_timeout_s, DEFAULT_LIMITS.unitTimeoutMs),
    callTimeoutMs: ms(c.call_timeout_s, DEFAULT_LIMITS.callTimeoutMs),
    interruptGraceMs: interruptGraceMs(c),
  };
}
