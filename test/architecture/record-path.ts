/**
 * A record's path, measured: the files whose code runs for one record from `sluice run` to its committed row, as a
 * night's run meets it (the table exists, the service answered before). A pipeline of two units, read one at a time,
 * runs in this process under V8's precise coverage; the path of the second unit's records is
 * - the files whose functions run between the first unit's commit and the second's (the afterCommit seam): reading,
 *   decoding, transforming, judging and committing the unit;
 * - the files on the call stack when the second unit's read starts (who drives it there: the run, the runtime);
 * minus the emulator (it plays the service) and the test's own code. A file's top level (its imports, its
 * definitions) does not count: only functions that ran.
 */
import { readFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import path from 'node:path';
import type { Source } from '../../src/core/types.js';
import { registry as defaultRegistry, type Registry } from '../../src/pipeline/registry.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

export interface PathFile {
  file: string;
  lines: number;
}

interface FunctionCoverage {
  functionName: string;
  ranges: { startOffset: number; endOffset: number; count: number }[];
}

interface ScriptCoverage {
  url: string;
  functions: FunctionCoverage[];
}

/** The project's own product file behind a script's URL (`src/…`, `sinks/…`), or undefined for anything else. */
function productFile(url: string): string | undefined {
  const file = url.startsWith('file://') ? new URL(url).pathname : url;
  const rel = path.relative(ROOT, file).split(path.sep).join('/');
  if (!/^(src|sinks)\//.test(rel) || rel.startsWith('src/emulator/')) return undefined;
  return rel.replace(/\?.*$/, '');
}

/** Files with a function (not the module's top level) that ran. */
function ranIn(coverage: ScriptCoverage[]): Set<string> {
  const out = new Set<string>();
  for (const script of coverage) {
    const file = productFile(script.url);
    if (file === undefined) continue;
    const ran = script.functions.some(
      (f) => f.ranges[0] !== undefined && f.ranges[0].startOffset > 0 && f.ranges[0].count > 0,
    );
    if (ran) out.add(file);
  }
  return out;
}

/** The product files a stack names, in order. */
function stackFiles(stack: string): string[] {
  const out: string[] = [];
  for (const m of stack.matchAll(/\(?((?:file:\/\/)?\/[^\s():]+\.ts)(?::\d+){0,2}\)?/g)) {
    const file = productFile(m[1]!);
    if (file !== undefined && !out.includes(file)) out.push(file);
  }
  return out;
}

export interface MeasureOptions {
  /** Runs the pipeline through the CLI (in this process) with a registry and an afterCommit seam. */
  run(registry: Registry, afterCommit: () => Promise<void>): Promise<void>;
  /** The source type to watch (the pipeline's). */
  source: string;
}

/** The record path of one run of a pipeline with one unit. */
export async function measureRecordPath(opts: MeasureOptions): Promise<PathFile[]> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false });
  const take = async (): Promise<ScriptCoverage[]> =>
    (await session.post('Profiler.takePreciseCoverage')).result as unknown as ScriptCoverage[];
  let inFlight: Set<string> | undefined;
  let callers: string[] = [];
  let commits = 0;
  const watched: Registry = {
    ...defaultRegistry,
    source: defaultRegistry.source.map((def) =>
      def.type !== opts.source
        ? def
        : {
            ...def,
            create: (config: unknown, deps: Parameters<typeof def.create>[1]) => {
              const source = def.create(config, deps) as Source;
              const read = source.read.bind(source);
              source.read = (unit, ctx) => {
                if (commits === 1) callers = stackFiles(new Error().stack ?? '');
                return read(unit, ctx);
              };
              return source;
            },
          },
    ),
  };
  try {
    await opts.run(watched, async () => {
      commits++;
      // After the first unit: what ran to set the night up is behind; after the second: what ran for its records.
      const ran = ranIn(await take());
      if (commits === 2) inFlight = ran;
    });
  } finally {
    await session.post('Profiler.stopPreciseCoverage');
    session.disconnect();
  }
  if (inFlight === undefined) throw new Error('the run committed fewer than two units: no record path to measure');
  const files = [...new Set([...callers, ...inFlight])].sort();
  return files.map((file) => ({ file, lines: readFileSync(path.join(ROOT, file), 'utf8').split('\n').length - 1 }));
}
