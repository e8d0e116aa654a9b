/**
 * What the secrets tests share: a canary's pieces searched for in text and bytes, every file a run leaves, and the
 * CLI run in this process with its output as the real process writes it (cli/io.ts `printed`: redacted, control
 * characters escaped).
 */
import { lstatSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { runCli } from '../../src/cli/cli.js';
import { printed } from '../../src/cli/io.js';
import { memoryIo } from '../cli/memory-io.js';

/**
 * Every 8-character piece of each canary: an error message that quotes raw input cut short (V8's JSON.parse quotes
 * only a window of the text) can hold part of a secret, which whole-secret redaction does not catch.
 */
export function piecesOf(...canaries: string[]): string[] {
  return canaries.flatMap((c) => Array.from({ length: c.length - 7 }, (_, i) => c.slice(i, i + 8)));
}

/** The pieces found in `text` (UTF-8, and UTF-16 for database files that store text so). */
export function piecesIn(pieces: readonly string[], text: string | Buffer): string[] {
  const b = Buffer.isBuffer(text) ? text : Buffer.from(text);
  return pieces.filter((p) => b.includes(p) || b.includes(Buffer.from(p, 'utf16le')));
}

/** Every file under `dir` (symlinks not followed), as bytes. */
export function everyFile(root: string, dir = root): { file: string; bytes: Buffer }[] {
  const out: { file: string; bytes: Buffer }[] = [];
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name);
    const st = lstatSync(p);
    if (st.isDirectory()) out.push(...everyFile(root, p));
    else if (st.isFile()) out.push({ file: path.relative(root, p), bytes: readFileSync(p) });
  }
  return out;
}

export interface Command {
  args: string[];
  code: number;
  stdout: string;
  stderr: string;
}

/** `sluice …args` in this process, with `env` set in the process's environment too (drivers read it there). */
export async function sluice(args: string[], env: Record<string, string> = {}): Promise<Command> {
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  Object.assign(process.env, env);
  try {
    const io = memoryIo({ ...process.env });
    const code = await runCli(args, io);
    return { args, code, stdout: io.stdout.map(printed).join('\n'), stderr: io.stderr.map(printed).join('\n') };
  } finally {
    for (const [k, v] of Object.entries(saved))
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
  }
}
