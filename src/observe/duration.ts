/** A duration option of the pipeline file's `notify:`, `metrics:` and `checks:` blocks (core/duration.ts). */
import { z } from 'zod';
import { parseDuration } from '../core/duration.js';

/** A duration option, checked when the file is validated. */
export function durationOption(what: string) {
  return z
    .string()
    .refine((s) => parseDuration(s) > 0, { message: 'a duration such as "90s", "30m", "26h" or "2d"' })
    .describe(what);
}
