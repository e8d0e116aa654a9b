/**
 * Changes made by hand to a pipeline's state (`sluice state set/reset/drop`), recorded in its run history
 * (`runs.jsonl`) among the runs: who, when, what. A change's line has a `kind` and no `run`/`attempt`, so the readers
 * of attempts (run-history.ts, the report) pass it by; `sluice runs` lists both.
 */
import { open, readFile } from 'node:fs/promises';
import { hostname, userInfo } from 'node:os';
import { PRIVATE_FILE } from '../core/private-files.js';
import { redact } from '../core/redact.js';

export type StateChangeKind = 'state-set' | 'state-reset' | 'state-drop';

export interface StateChange {
  kind: StateChangeKind;
  pipeline: string;
  /** ISO 8601. */
  at: string;
  /** `user@host`. */
  by: string;
  pid: number;
  command: string;
  /** What changed, one line. */
  what: string;
  /** The sinks it concerned (`describe()`). */
  sinks: string[];
  /** `state set`: the cursor field, the value set, and the value the next run would have started from. */
  cursor?: { field: string; value: string | number; before?: string | number };
  /** `state drop`: what was removed. */
  removed?: string[];
}

function whoAmI(): string {
  let user: string;
  try {
    user = userInfo().username;
  } catch {
    user = String(process.getuid?.() ?? 'unknown');
  }
  return `${user}@${hostname()}`;
}

/** Appends the change durably to the history file. */
export async function recordStateChange(
  historyFile: string,
  change: Omit<StateChange, 'at' | 'by' | 'pid'>,
): Promise<StateChange> {
  const line: StateChange = { ...change, at: new Date().toISOString(), by: whoAmI(), pid: process.pid };
  const fh = await open(historyFile, 'a', PRIVATE_FILE);
  try {
    await fh.write(redact(JSON.stringify(line) + '\n'));
    await fh.sync();
  } finally {
    await fh.close();
  }
  return line;
}

const KINDS: readonly string[] = ['state-set', 'state-reset', 'state-drop'];

/** The changes the history records, oldest first (lines cut short by a crash are skipped). */
export async function readStateChanges(historyFile: string): Promise<StateChange[]> {
  let text: string;
  try {
    text = await readFile(historyFile, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  const out: StateChange[] = [];
  for (const line of text.split('\n')) {
    if (!line.includes('"kind"')) continue;
    let r: unknown;
    try {
      r = JSON.parse(line);
    } catch {
      continue; // a line cut short
    }
    // A line edited by hand or written by another version: only a change that says what and when.
    if (typeof r !== 'object' || r === null || Array.isArray(r)) continue;
    const c = r as Partial<StateChange>;
    if (!KINDS.includes(c.kind!) || typeof c.at !== 'string' || Number.isNaN(Date.parse(c.at))) continue;
    out.push({ ...c, what: typeof c.what === 'string' ? c.what : c.kind } as StateChange);
  }
  return out;
}
