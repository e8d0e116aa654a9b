/**
 * Runs the fault matrix's cells (bench/fault-matrix.ts): a clean run per pipeline and sink, then each cell against
 * an emulator of its own that injects faults, rerun as cron would until it succeeds, and compared with the clean run.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Logger } from '../../src/core/types.js';
import { startEmulator } from '../../src/emulator/server.js';
import { runPipeline } from '../../src/operations/run.js';
import { loadPipeline } from '../../src/pipeline/load.js';
import { startPostgres, type PostgresServer } from '../../test/support/postgres-server.js';
import { CUT_MOMENTS } from '../../test/support/tcp-proxy.js';
import {
  PAID,
  PIPELINES,
  SINKS,
  faultConfig,
  faultSeed,
  type CellResult,
  type CellRun,
  type MatrixOptions,
  type MatrixResult,
  type PipelineKind,
  type SinkKind,
} from './fault-cells.js';
import { digest, postgresDigest } from './fault-digest.js';
import { emulatorOptions, pgCell, pipelineYaml, type PgCell } from './fault-pipeline.js';
import { faultText } from './fault-report.js';
import { inParallel, paidText, sameDigest, type Digest } from './matrix-common.js';

export async function runFaultMatrix(opts: MatrixOptions = {}): Promise<MatrixResult> {
  const started = Date.now();
  const seeds = opts.seeds ?? [1, 2, 3, 4, 5];
  const pipelines = opts.pipelines ?? PIPELINES;
  const sinks = opts.sinks ?? SINKS;
  const rate = opts.rate ?? 0.1;
  const root = mkdtempSync(path.join(tmpdir(), 'sluice-fault-matrix-'));
  const jobs = seeds
    .flatMap((seed) => pipelines.flatMap((p) => sinks.map((s) => ({ seed, p, s }))))
    .filter(({ seed, p, s }) => opts.cells?.({ seed, pipeline: p, sink: s }) ?? true);
  // One cluster for every postgres cell, each cell a database of its own.
  const pg = jobs.some((j) => j.s === 'postgres') ? await startPostgres() : undefined;
  try {
    const clean = new Map<string, Digest>();
    const cleanJobs = [...new Map(jobs.map(({ p, s }) => [`${p}/${s}`, { p, s }])).values()];
    await inParallel(cleanJobs, opts.parallel ?? 3, async ({ p, s }) => {
      const r = await runCell({ root, seed: 0, pipeline: p, sink: s, rate: 0, maxReruns: 0, pg });
      if (!r.digest || r.failures.length > 0)
        throw new Error(`the clean run of ${p} → ${s} failed: ${r.failures.join(' / ') || 'no output'}`);
      clean.set(`${p}/${s}`, r.digest);
    });

    const cells = await inParallel(jobs, opts.parallel ?? 3, async ({ seed, p, s }) => {
      const r = await runCell({ root, seed, pipeline: p, sink: s, rate, maxReruns: opts.maxReruns ?? 3, pg });
      const c = clean.get(`${p}/${s}`)!;
      const equal = r.digest !== undefined && sameDigest(r.digest, c);
      const paidOnce = PAID[p].every((k) => r.paid[k] === 1) && Object.keys(r.paid).every((k) => PAID[p].includes(k));
      const cell: CellResult = { ...r, clean: c, equal, paidOnce };
      opts.progress?.(
        `seed ${seed} ${p} → ${s}: ${r.runs} run(s), ${r.retries} retries, faults ${faultText(r.faults)}, ` +
          `${equal ? 'equal' : 'DIFFERENT'}, paid ${paidText(r.paid)} (${cell.seconds.toFixed(1)} s)`,
      );
      return cell;
    });
    return { cells, seconds: (Date.now() - started) / 1000, rate };
  } finally {
    pg?.stop();
    if (!opts.keep) rmSync(root, { recursive: true, force: true });
  }
}
async function runCell(c: {
  root: string;
  seed: number;
  pipeline: PipelineKind;
  sink: SinkKind;
  rate: number;
  maxReruns: number;
  pg: PostgresServer | undefined;
}): Promise<CellRun> {
  const t0 = Date.now();
  const name = `${c.rate === 0 ? 'clean' : `seed${c.seed}`}-${c.pipeline}-${c.sink}`;
  const dir = path.join(c.root, name);
  mkdirSync(dir, { recursive: true });
  const emu = await startEmulator(emulatorOptions(c.pipeline, c.rate === 0 ? undefined : faultConfig(c)));
  const logLines: string[] = [];
  const log = memoryLogger(logLines);
  const file = path.join(dir, 'pipeline.yaml');
  let database: PgCell | undefined;
  if (c.sink === 'postgres') {
    if (!c.pg) throw new Error('a postgres cell needs the cluster');
    database = await pgCell(
      c.pg,
      name.replace(/-/g, '_'),
      c.rate === 0 ? undefined : faultSeed(c.seed, c.pipeline, c.sink),
    );
  }
  writeFileSync(file, pipelineYaml(c.pipeline, c.sink, emu.url, database?.url));
  let runs = 0;
  let retries = 0;
  let succeeded = false;
  const failures: string[] = [];
  try {
    const loaded = await loadPipeline(file, {});
    while (!succeeded && runs <= c.maxReruns) {
      runs++;
      logLines.push(`--- run ${runs}`);
      try {
        const summary = await runPipeline(
          loaded,
          { fresh: false, logFormat: 'text', quiet: true, progress: false },
          { log },
        );
        retries += summary.retries;
        succeeded = true;
      } catch (err) {
        const partial = (err as { summary?: { retries: number } }).summary;
        retries += partial?.retries ?? 0;
        failures.push(((err as Error).message ?? String(err)).split('\n')[0]!);
      }
    }
  } finally {
    await emu.close();
    await database?.proxy.close();
    writeFileSync(path.join(dir, 'log.txt'), logLines.join('\n') + '\n');
  }
  const faults: Record<string, number> = { ...emu.stats.faults };
  for (const m of CUT_MOMENTS) if (database?.proxy.cuts[m]) faults[`pg_reset_${m}`] = database.proxy.cuts[m];
  return {
    seed: c.seed,
    pipeline: c.pipeline,
    sink: c.sink,
    runs,
    succeeded,
    retries,
    faults,
    requests: Object.values(emu.stats.routes).reduce((a, b) => a + b, 0),
    paid: { ...emu.stats.paid },
    recovered: logLines.filter((l) => l.includes('recovered the lost answer')).length,
    failures,
    digest: succeeded
      ? database
        ? await postgresDigest(c.pg!, database.name, c.pipeline)
        : await digest(c.pipeline, c.sink, dir)
      : undefined,
    seconds: (Date.now() - t0) / 1000,
  };
}
function memoryLogger(lines: string[]): Logger {
  const at = (level: string) => (msg: string, fields?: Record<string, unknown>) =>
    lines.push(`${level} ${msg}${fields ? ` ${JSON.stringify(fields)}` : ''}`);
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}
