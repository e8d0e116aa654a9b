/**
 * The pipeline file's schema, assembled from the registry: the `source`, each transform and each sink are
 * discriminated by `type` over the registered components, whose own schemas (beside their constructors) do the rest.
 * The same schema validates files, generates config/pipeline.schema.json and the README's option tables.
 */
import { z } from 'zod';
import type { ComponentDef } from '../contracts/component.js';
import { metricsSchema, notifySchema } from '../observe/config.js';
import { secretOption } from '../core/secret-option.js';
import { schemaContractOption } from '../schema/contract.js';
import { resumePolicySchema } from '../sources/resume-policy.js';
import { limitsSchema } from './limits-schema.js';
import type { Registry } from './registry.js';

/** `name` becomes a directory (`.sluice/<name>`) and a key in sinks' state: no separators, no dot-dot. */
export const PIPELINE_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

const ms = (what: string) => z.number().int().positive().optional().describe(what);

export const serviceSchema = z
  .object({
    base_url: secretOption(
      z
        .string()
        .refine((s) => s === 'emulator' || /^https?:\/\/[^\s/]+/.test(s), {
          message: 'must be an http(s) URL such as https://api.brightdata.com, or `emulator`',
        })
        .describe('Service address, e.g. https://api.brightdata.com; `emulator` starts the embedded emulator.'),
      'connection',
    ),
    api_key: secretOption(
      z
        .string()
        .min(1, 'api_key is empty')
        .describe('Bearer API key; take it from the environment: ${SLUICE_API_KEY}. Never logged.'),
      'value',
    ),
    connections: z
      .number()
      .int()
      .min(1)
      .max(256)
      .optional()
      .describe(
        'Sockets to the service at most (default 64). A crawl never has more requests in flight than this, whatever its concurrency.',
      ),
    timeouts: z
      .object({
        connect: ms('Connect timeout in ms (default 10000).'),
        headers: ms('Time to the response headers in ms (default 60000).'),
        body: ms('Longest pause while reading a body in ms (default 120000).'),
      })
      .strict()
      .optional()
      .describe('HTTP timeouts.'),
    retry: z
      .object({
        retries: z.number().int().min(0).max(20).optional().describe('Attempts after the first (default 5).'),
        base_delay_ms: ms('First backoff in ms (default 500).'),
        max_delay_ms: ms('Longest single wait in ms, Retry-After included (default 30000).'),
      })
      .strict()
      .optional()
      .describe('Retries of 429, 5xx and network errors (4xx are never retried; paid calls only when safe).'),
    emulator: z
      .object({
        seed: z.number().int().optional().describe('Seeds all generated data (default 1).'),
        size: z.number().int().min(0).optional().describe('Records per dataset (default 10000).'),
        time_scale: z
          .number()
          .positive()
          .optional()
          .describe('Emulated time runs this many times faster (jobs finish sooner; default 1).'),
        latency_ms: z.number().int().min(0).optional().describe('Added to every response, in ms (default 0).'),
        now: z.iso
          .datetime({ offset: true })
          .optional()
          .describe('Start the emulated clock at this date; new records and reviews appear as it passes them.'),
        faults: z.string().min(1).optional().describe('Fault-injection YAML file, relative to the pipeline file.'),
      })
      .strict()
      .optional()
      .describe('Settings of the embedded emulator (used when base_url is `emulator`).'),
  })
  .strict()
  .describe('Where the service is and how to talk to it. Required unless the source reads local files (`file`).');

type AnyObjectSchema = z.ZodObject<any>;

/** A component's validated config: its `type` and its own options (typed by the component's schema). */
export interface ComponentConfig {
  type: string;
  [option: string]: any;
}

/** `type`-discriminated union over the registered components of one kind. */
function componentUnion(defs: ComponentDef<any>[], what: string): z.ZodType<ComponentConfig> {
  const options = defs.map((d) => d.schema as unknown as AnyObjectSchema);
  if (options.length === 0) return z.never().describe(`No ${what} is registered.`) as z.ZodType<never>;
  return z.discriminatedUnion(
    'type',
    options as [AnyObjectSchema, ...AnyObjectSchema[]],
  ) as unknown as z.ZodType<ComponentConfig>;
}

/**
 * The whole file. `sink` xor `sinks` is checked by the loader on the raw file (a zod refinement would be skipped
 * whenever another part of the file is invalid, and every problem should be reported at once).
 */
export function pipelineSchema(reg: Registry) {
  const source = componentUnion(reg.source, 'source');
  const transform = componentUnion(reg.transform, 'transform');
  const sink = componentUnion(reg.sink, 'sink');
  return z
    .object({
      version: z.literal(1).describe('Version of the pipeline file format: 1.'),
      name: z
        .string()
        .regex(PIPELINE_NAME, 'must be letters, digits, `_` and `-` (at most 64), starting with a letter or digit')
        .describe('Pipeline name: names the state directory `.sluice/<name>` and the sinks’ checkpoints.'),
      service: serviceSchema.optional(),
      source: source.describe('Where the records come from; `type` picks the source.'),
      transforms: z
        .array(transform)
        .default([])
        .describe('Applied in order to every batch; `type` picks the transform.'),
      sink: sink.optional().describe('Where the records go; `type` picks the sink. Use `sinks` to write to several.'),
      sinks: z.array(sink).min(1).optional().describe('Several sinks, each receiving every record.'),
      state_dir: z
        .string()
        .min(1)
        .optional()
        .describe('Checkpoints and dead letters, relative to the pipeline file (default `.sluice/<name>`).'),
      dead_letter: z
        .string()
        .min(1)
        .optional()
        .describe('Dead-letter file, relative to the pipeline file (default `<state_dir>/dead-letters.jsonl`).'),
      resume: resumePolicySchema.optional(),
      limits: limitsSchema.optional(),
      fast_path: z
        .boolean()
        .default(true)
        .describe(
          'Let sinks load downloaded files natively when there are no transforms (false: always decode in JS).',
        ),
      schema_contract: schemaContractOption,
      max_dead_letters: z
        .union([
          z.number().int().min(0),
          z.string().regex(/^\d+(\.\d+)?\s*%$/, 'a count such as 100, or a percentage of records such as "1%"'),
        ])
        .optional()
        .describe(
          'Failure budget: the run stops (exit code 4) once more records than this were dead-lettered — a count (`100`) or a percentage of the records (`"1%"`, judged after 1000 records and at the end). Committed units stay committed; the next run resumes. Default: no limit.',
        ),
      notify: notifySchema.optional(),
      metrics: metricsSchema.optional(),
    })
    .strict();
}

export type PipelineSchema = ReturnType<typeof pipelineSchema>;
export type PipelineConfig = z.output<PipelineSchema>;
