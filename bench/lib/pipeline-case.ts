/**
 * What the sink benchmarks (bench/cases/*.ts, bench/lib/cases.ts) share: the workload's parts through a whole
 * pipeline — `file` source, the case's transforms and sink — run by the engine as `sluice run` would, in the case's
 * child process; and the `--records N` of running a case file alone.
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../../src/core/types.js';
import type { CaseOutcome } from './child.js';

/** Only errors reach the terminal: the case's output is its RESULT line. */
const silent: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: (m) => process.stderr.write(`${m}\n`),
};

export interface PartsPipeline {
  /** The pipeline's name (its state directory under outDir). */
  name: string;
  partsDir: string;
  /** Where the pipeline file (and so the pipeline's state) goes. */
  outDir: string;
  concurrency: number;
  /** The pipeline's transforms: none for a sink's own cost, `NORMALIZE_COMPANY_PROFILES` for typed columns. */
  transforms: Record<string, unknown>[];
  /** The pipeline's `sink` block. */
  sink: Record<string, unknown>;
}

/** The workload's records as the company_profile preset declares them: the table a user of the dataset loads. */
export const NORMALIZE_COMPANY_PROFILES = [{ type: 'normalize', preset: 'company_profile' }];

/**
 * A case's setup (not measured): writes the pipeline file and loads it; resolves to the measured run, which fails
 * on any dead letter (every record of the workload must arrive).
 */
export async function partsPipelineCase(p: PartsPipeline): Promise<() => Promise<CaseOutcome>> {
  const { loadPipeline } = await import('../../src/pipeline/load.js');
  const { runPipeline } = await import('../../src/operations/run.js');
  const file = path.join(p.outDir, `${p.name}.yaml`);
  const config = {
    version: 1,
    name: p.name,
    service: { base_url: 'emulator', api_key: 'bench' },
    source: { type: 'file', paths: [p.partsDir], format: 'jsonl', concurrency: p.concurrency },
    ...(p.transforms.length > 0 && { transforms: p.transforms }),
    sink: p.sink,
  };
  // JSON is YAML.
  await writeFile(file, JSON.stringify(config, null, 2));
  const pipeline = await loadPipeline(file, {});
  return async () => {
    const summary = await runPipeline(
      pipeline,
      { fresh: true, logFormat: 'text', quiet: true, progress: false },
      { log: silent },
    );
    if (summary.deadLetters > 0) throw new Error(`${summary.deadLetters} dead letters`);
    return { records: summary.records };
  };
}

/** `--records N` of a case file run alone (`npx tsx bench/cases/<case>.ts --records N`); 200,000 without it. */
export function recordsArg(argv: readonly string[] = process.argv): number {
  const i = argv.indexOf('--records');
  if (i < 0) return 200_000;
  const n = Number(argv[i + 1]);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`--records takes a whole number of records, not ${argv[i + 1]}`);
  return n;
}

/** Records per wall second and uncompressed JSONL megabytes per wall second, as the bench tables print them. */
export function throughput(records: number, jsonlBytes: number, seconds: number): { recPerS: string; mbPerS: string } {
  return {
    recPerS: Math.round(records / seconds).toLocaleString('en'),
    mbPerS: (jsonlBytes / 1e6 / seconds).toFixed(1),
  };
}
