/**
 * Who a process is, well enough to tell later whether it still runs: what a lock file (run-lock.ts) and a run
 * history line (run-history.ts) record about the process that wrote them.
 *
 * A pid alone is not an identity. In a container the pid namespace is new for every start, so a retried pod's
 * process gets the very pid its killed predecessor had (often the lowest few), and a Kubernetes Indexed Job gives
 * the retried pod the same hostname too (`<job>-<index>`): "the holder's pid is alive on my host" is then true of
 * the process asking. So beside the hostname and the pid a holder records, on Linux:
 *
 * - `boot`: the kernel's boot id (/proc/sys/kernel/random/boot_id). Another boot id is another kernel: the machine
 *   rebooted, or (same hostname) another node of a cluster.
 * - `pidns`: the pid namespace (/proc/self/ns/pid). Only a process in the same namespace sees the holder's pid.
 * - `start`: the process's start time in clock ticks since boot (field 22 of /proc/<pid>/stat). A pid that was
 *   reused by another process has another start time.
 *
 * Judged from here (`judgeHolder`):
 * - another hostname: `other-host`. Its pid means nothing here and it is never presumed dead; a shared volume is
 *   exactly where two hosts meet.
 * - same hostname, same kernel and pid namespace: `alive` or `dead`, exactly — the pid must be running and, when the
 *   holder recorded one, with the same start time.
 * - same hostname, another kernel or pid namespace (a retried pod, a container restarted, a rebooted machine):
 *   `elsewhere`. Nothing here can look at that process: the lock decides by its lease (run-lock.ts).
 * Records written before these fields existed (or on a system without /proc) are judged by the pid alone.
 */
import { readFileSync, readlinkSync } from 'node:fs';
import { hostname } from 'node:os';

export interface ProcessIdentity {
  pid: number;
  host: string;
  /** Linux only; see above. */
  boot?: string;
  pidns?: string;
  start?: string;
}

export type Verdict = 'alive' | 'dead' | 'elsewhere' | 'other-host';

function readOptional(read: () => string): string | undefined {
  try {
    return read().trim() || undefined;
  } catch {
    return undefined;
  }
}

/** Field 22 of /proc/<pid>/stat: after the command name, which is in parentheses and may hold spaces or ')'. */
export function processStart(pid: number): string | undefined {
  const stat = readOptional(() => readFileSync(`/proc/${pid}/stat`, 'latin1'));
  if (stat === undefined) return undefined;
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // fields[0] is field 3 (state): field 22 is fields[19].
  return fields[19];
}

let self: ProcessIdentity | undefined;

/** This process. Computed once: none of it changes while the process runs (the hostname aside, read each time). */
export function selfIdentity(): ProcessIdentity {
  self ??= (() => {
    const boot = readOptional(() => readFileSync('/proc/sys/kernel/random/boot_id', 'utf8'));
    const pidns = readOptional(() => readlinkSync('/proc/self/ns/pid'));
    const start = processStart(process.pid);
    return {
      pid: process.pid,
      host: '',
      ...(boot !== undefined && { boot }),
      ...(pidns !== undefined && { pidns }),
      ...(start !== undefined && { start }),
    };
  })();
  return { ...self, host: hostname() };
}

/** Whether `pid` is a live process in this pid namespace (EPERM: alive but someone else's). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** A field both sides recorded and that differs: absent on either side says nothing. */
const differs = (a: string | undefined, b: string | undefined): boolean =>
  a !== undefined && b !== undefined && a !== b;

/**
 * Whether `holder` still runs, as far as this process can tell. `ours`: the holder is this very process (the caller
 * knows, e.g. by the lock's token), so its pid being ours proves nothing either way.
 */
export function judgeHolder(holder: ProcessIdentity, me: ProcessIdentity = selfIdentity(), ours = false): Verdict {
  if (holder.host !== me.host) return 'other-host';
  if (differs(holder.boot, me.boot) || differs(holder.pidns, me.pidns)) return 'elsewhere';
  if (holder.pid === me.pid) {
    if (ours) return 'alive';
    // Our own pid, not written by us: a process before us had it (a container's previous life) — unless the start
    // time says it is this very process.
    return holder.start !== undefined && holder.start === me.start ? 'alive' : 'dead';
  }
  if (!processAlive(holder.pid)) return 'dead';
  if (holder.start !== undefined) {
    const start = processStart(holder.pid);
    if (start !== undefined && start !== holder.start) return 'dead';
  }
  return 'alive';
}

/** The identity fields of a parsed record (a lock file, a history line); undefined when pid or host is missing. */
export function identityOf(r: Record<string, unknown>): ProcessIdentity | undefined {
  if (typeof r.pid !== 'number' || typeof r.host !== 'string') return undefined;
  const text = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
  const boot = text(r.boot);
  const pidns = text(r.pidns);
  const start = text(r.start);
  return {
    pid: r.pid,
    host: r.host,
    ...(boot !== undefined && { boot }),
    ...(pidns !== undefined && { pidns }),
    ...(start !== undefined && { start }),
  };
}
