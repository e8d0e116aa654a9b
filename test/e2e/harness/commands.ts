/**
 * The `sluice` command in end-to-end tests: the real executable in a child process, pointed at an emulator this
 * test process started, or the CLI's entry in this process (sluiceInProcess) for commands that need no process of
 * their own. The child is spawned asynchronously: the emulator lives on this process's event loop, so a blocking
 * spawn would leave every request of the child unanswered.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import path from 'node:path';
import type { CliIo } from '../../../src/cli/io.js';
import { API_KEY, ROOT } from './workspace.js';

const BIN = path.join(ROOT, 'bin/sluice.js');

export interface Result {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface SluiceRun extends Promise<Result> {
  child: ChildProcess;
}

/** Runs `node bin/sluice.js …args` against `service` (its URL and key in SLUICE_BASE_URL / SLUICE_API_KEY). */
export function sluice(
  args: string[],
  opts: { service?: { url: string }; env?: Record<string, string>; cwd?: string } = {},
): SluiceRun {
  // The child must not inherit a key or address from the developer's shell.
  const { SLUICE_BASE_URL: _url, SLUICE_API_KEY: _key, ...inherited } = process.env;
  const env: Record<string, string | undefined> = {
    ...inherited,
    ...(opts.service && { SLUICE_BASE_URL: opts.service.url, SLUICE_API_KEY: API_KEY }),
    ...opts.env,
  };
  const child = spawn(process.execPath, [BIN, ...args], { cwd: opts.cwd ?? ROOT, env, stdio: 'pipe' });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (s: string) => (stdout += s));
  child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
  const done = new Promise<Result>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  }) as SluiceRun;
  done.child = child;
  return done;
}

/** A command run by `sluiceInProcess`: its result once it ends, and its stderr while it runs (see lineSeen). */
export interface InProcessRun extends Promise<Result> {
  /** Emits `data` with each stderr line (newline included) as it is written, and `close` once the command ended. */
  stderrEvents: EventEmitter;
  readonly ended: boolean;
}

/**
 * `sluice …args` as `sluice()` runs it, with the same environment and a `Result` of the same text (each line
 * redacted and ended by a newline, as the real process writes it), but in this process: the CLI's own entry
 * (runCli) instead of a child, which spares the child's start and its DuckDB load. Not for what needs a process of
 * its own: signals and kill -9 (failpoints kill the process they are armed in), a second process holding a lock,
 * secrets registered by an earlier command (src/core/redact.ts keeps them process-wide: a later command's output
 * would be redacted even if it forgot to register its key), a real terminal, or the executable's startup.
 * A DuckDB file it writes stays open in this process (the sink leaves it in DuckDB's cache): a child started later
 * could not open it. Relative paths start at this process's directory, the repository (as `sluice()`'s default `cwd`).
 */
export function sluiceInProcess(
  args: string[],
  opts: { service?: { url: string }; env?: Record<string, string> } = {},
): InProcessRun {
  if (opts.env?.SLUICE_FAILPOINTS !== undefined)
    throw new Error('sluiceInProcess: a failpoint kills the process it is armed in: use sluice() for it');
  if (process.cwd() !== ROOT) throw new Error(`sluiceInProcess: runs from ${ROOT}, not ${process.cwd()}`);
  const { SLUICE_BASE_URL: _url, SLUICE_API_KEY: _key, ...inherited } = process.env;
  const env: Record<string, string | undefined> = {
    ...inherited,
    ...(opts.service && { SLUICE_BASE_URL: opts.service.url, SLUICE_API_KEY: API_KEY }),
    ...opts.env,
  };
  const stderrEvents = new EventEmitter();
  const state = { ended: false };
  let stdout = '';
  let stderr = '';
  const done = (async (): Promise<Result> => {
    // Imported here: the files that never run in-process need not load the whole CLI.
    const [{ runCli }, { redact }] = await Promise.all([
      import('../../../src/cli/cli.js'),
      import('../../../src/core/redact.js'),
    ]);
    const interrupts = new AbortController();
    const io: CliIo = {
      out: (text) => void (stdout += redact(text) + '\n'),
      err: (text) => {
        const line = redact(text) + '\n';
        stderr += line;
        stderrEvents.emit('data', line);
      },
      env,
      // What the real process has with its stdout piped (processIo).
      columns: 100,
      untilStopped: () => new Promise<void>(() => undefined),
      interrupts: () => ({ signal: interrupts.signal, release: () => undefined }),
    };
    try {
      const code = await runCli(args, io);
      return { code, signal: null, stdout, stderr };
    } finally {
      state.ended = true;
      stderrEvents.emit('close');
    }
  })() as InProcessRun;
  done.stderrEvents = stderrEvents;
  Object.defineProperty(done, 'ended', { get: () => state.ended });
  return done;
}

/** `runOk` in this process (sluiceInProcess): the same result and the same failure message. */
export async function runOkInProcess(
  file: string,
  service: { url: string } | undefined,
  ...extra: string[]
): Promise<Result> {
  const r = await sluiceInProcess(['run', file, '--no-progress', ...extra], service ? { service } : {});
  if (r.code !== 0)
    throw new Error(`sluice run ${path.basename(file)} (in-process) exited ${r.code}:\n${r.stderr}\n${r.stdout}`);
  return r;
}

/**
 * Resolves when the command's stderr has a line matching `re`, or when it ended (the caller's assertions then
 * fail). A child (`sluice()`) or a command in this process (`sluiceInProcess()`).
 */
export function lineSeen(run: SluiceRun | InProcessRun, re: RegExp): Promise<void> {
  if (!('child' in run)) return stderrSeen(run, re);
  return new Promise((resolve) => {
    let text = '';
    const onData = (s: string): void => {
      text += s;
      if (re.test(text)) {
        run.child.stderr?.off('data', onData);
        resolve();
      }
    };
    run.child.stderr?.on('data', onData);
    run.child.once('close', () => resolve());
    if (run.child.exitCode !== null || run.child.signalCode !== null) resolve();
  });
}

function stderrSeen(run: InProcessRun, re: RegExp): Promise<void> {
  return new Promise((resolve) => {
    let text = '';
    const stop = (): void => {
      run.stderrEvents.off('data', onData);
      run.stderrEvents.off('close', stop);
      resolve();
    };
    const onData = (s: string): void => {
      text += s;
      if (re.test(text)) stop();
    };
    run.stderrEvents.on('data', onData);
    run.stderrEvents.once('close', stop);
    if (run.ended) stop();
  });
}

/** A `run` that must succeed; the failure message carries the child's stderr. */
export async function runOk(file: string, service: { url: string } | undefined, ...extra: string[]): Promise<Result> {
  const r = await sluice(['run', file, '--no-progress', ...extra], service ? { service } : {});
  if (r.code !== 0) throw new Error(`sluice run ${path.basename(file)} exited ${r.code}:\n${r.stderr}\n${r.stdout}`);
  return r;
}

/**
 * `sluice run` in this process (the CLI's own entry, output recorded), for a run a test is not about, such as a clean
 * reference output: it spares a child process its start and its DuckDB load. Throws with the run's stderr on failure.
 */
export async function runInProcess(
  file: string,
  service: { url: string } | undefined,
  ...extra: string[]
): Promise<{ stdout: string; stderr: string }> {
  // Imported here: the files that never run in-process need not load the whole CLI.
  const [{ runCli }, { memoryIo }] = await Promise.all([
    import('../../../src/cli/cli.js'),
    import('../../cli/memory-io.js'),
  ]);
  const io = memoryIo({ ...(service && { SLUICE_BASE_URL: service.url }), SLUICE_API_KEY: API_KEY });
  const code = await runCli(['run', file, '--no-progress', ...extra], io);
  const out = { stdout: io.stdout.join('\n'), stderr: io.stderr.join('\n') };
  if (code !== 0) throw new Error(`sluice run ${path.basename(file)} (in-process) exited ${code}:\n${out.stderr}`);
  return out;
}

/**
 * How a failed command ended: the last two lines of stderr, `error: <cause>` then `  fix: <what to do>` (log lines
 * before them may name the failing unit).
 */
export function failure(r: Result): { error: string; fix: string } {
  const lines = r.stderr.trimEnd().split('\n');
  return { error: lines.at(-2) ?? '', fix: (lines.at(-1) ?? '').trim() };
}
