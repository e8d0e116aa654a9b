/**
 * One measured case per child process, so each peak RSS is the case's own (getrusage's maxRSS of a fresh process,
 * DuckDB's threads and allocations included) and no case inherits another's heap, caches or JIT state.
 *
 * Parent: `runCase(entry, name, args)` runs `node <entry compiled to JS> --bench-case '<json>'` (plain node: see
 * transpile.ts) and parses the one `RESULT {…}` line the child prints. Child: the entry module calls
 * `caseMain(cases)` when `isCaseChild`; it times the case's run alone (wall, and user + system CPU of every
 * thread), not its setup, and reports the RSS the run started from beside the peak.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { compiledPath, transpileProject } from './transpile.js';

export interface CaseOutcome {
  records: number;
  /** Bytes the case wrote (files, database), when it wrote any. */
  outputBytes?: number;
  note?: string;
}

/**
 * A case: its setup (imports, opening files: not measured) resolves to the run that is measured. Cases import what
 * they use inside their setup, so a case's RSS holds only its own modules (DuckDB's library alone is ~50 MB).
 */
export type CaseFn<A> = (args: A) => Promise<() => Promise<CaseOutcome>>;

export interface CaseResult extends CaseOutcome {
  name: string;
  seconds: number;
  /** User + system CPU of the child (all threads): steadier than wall time when other work shares the cores. */
  cpuSeconds: number;
  /** getrusage maxRSS of the child: the case's peak, Node's own baseline included. */
  peakRssMb: number;
  /** RSS when the case started (Node + the modules it imported). */
  startRssMb: number;
}

const RESULT = 'RESULT ';
const FLAG = '--bench-case';
let transpiled: Promise<void> | undefined;

/** Runs case `name` of the entry module `entryUrl` (an `import.meta.url`) in a fresh plain-node process. */
export async function runCase<A>(
  entryUrl: string,
  name: string,
  args: A,
  nodeFlags: string[] = [],
): Promise<CaseResult> {
  await (transpiled ??= transpileProject());
  const script = compiledPath(fileURLToPath(entryUrl));
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--expose-gc', ...nodeFlags, script, FLAG, JSON.stringify({ name, args })], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      const line = out.split('\n').find((l) => l.startsWith(RESULT));
      if (code === 0 && line) resolve(JSON.parse(line.slice(RESULT.length)) as CaseResult);
      else
        reject(
          new Error(`case ${name} failed (${signal ?? `exit ${code}`})${out ? `: ${out.trim().slice(-500)}` : ''}`),
        );
    });
  });
}

/** Whether this process is a child `runCase` started on the module of `moduleUrl`. */
export function isCaseChild(moduleUrl: string): boolean {
  return process.argv[2] === FLAG && process.argv[1] === fileURLToPath(moduleUrl);
}

/** The child side: runs the case named in argv, prints its `RESULT` line, exits. */
export async function caseMain<A>(cases: Record<string, CaseFn<A>>): Promise<void> {
  const { name, args } = JSON.parse(process.argv[3] ?? '{}') as { name: string; args: A };
  const fn = cases[name];
  if (!fn) throw new Error(`unknown case ${name}; cases: ${Object.keys(cases).join(', ')}`);
  const run = await fn(args);
  globalThis.gc?.();
  const startRssMb = process.memoryUsage.rss() / 2 ** 20;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const outcome = await run();
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const result: CaseResult = {
    name,
    seconds,
    cpuSeconds: (cpu.user + cpu.system) / 1e6,
    peakRssMb: process.resourceUsage().maxRSS / 1024,
    startRssMb,
    ...outcome,
  };
  process.stdout.write(`${RESULT}${JSON.stringify(result)}\n`);
  // Writes to a pipe are synchronous on POSIX; exiting does not wait for handles a case left open (DuckDB's cache).
  process.exit(0);
}
