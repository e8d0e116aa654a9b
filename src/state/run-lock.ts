/**
 * One run of a pipeline at a time: a lock file beside the pipeline's state (and in a file sink's output directory,
 * which two pipelines may share), removed when the run ends. It names its holder (process-identity.ts: pid, host,
 * boot id, pid namespace, start time) and a random token.
 *
 * Taking it: the holder's record is written to a temporary file and hard-linked to the lock's name. link() fails
 * with EEXIST if the name exists, atomically, on local disks and on NFS, and the name never shows a half-written
 * record.
 *
 * A holder that died without removing it (kill -9, the OOM killer, a power cut) is taken over:
 * - on the same host, kernel and pid namespace as soon as its pid is gone or runs another process (start time);
 * - from another container or boot of the same hostname (a retried Kubernetes pod is named like the dead one and
 *   gets its pid), where nothing can look at the holder's process, once its lease lapsed: a holder touches its lock
 *   file every `renewMs` (10 s) while it runs; a lock whose file did not change for `leaseMs` (90 s), watched on this
 *   process's own monotonic clock, has no live holder. Clocks need not agree; a holder whose event loop stalls for
 *   90 s is the risk taken, where waiting for a kernel that is gone would be forever.
 * A lock of another hostname is never taken over: a shared volume is exactly where two hosts meet.
 *
 * Takeover is a compare-and-swap, because several runs may find the same dead holder at once and only one may win:
 * the takers race to create a claim file named after the dead holder's record (O_EXCL, through link()); the one that
 * creates it checks that the lock still holds that record and renames its own record over it. The claim serialises
 * the takeovers of one dead record, so no taker removes a lock another just took. A claimant that dies mid-takeover
 * is itself judged like a holder, and the next generation of the claim (`.takeover-<hash>-<n+1>`) is raced for.
 */
import { createHash, randomBytes } from 'node:crypto';
import { link, open, readFile, rename, rm, utimes } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';
import { LockedError, type LockHolder } from '../core/errors.js';
import { notYet, pollUntil, RetryPolicy, type NotYet } from '../core/retry.js';
import type { Logger } from '../core/types.js';
import { judgeHolder, identityOf, selfIdentity, type ProcessIdentity, type Verdict } from './process-identity.js';

export { LockedError, type LockHolder } from '../core/errors.js';
export { processAlive } from './process-identity.js';

const RENEW_MS = 10_000;
const LEASE_MS = 90_000;
/** Generations of one dead record's claim tried before giving up as busy (each needs a dead claimant). */
const MAX_CLAIM_GENERATIONS = 32;
/** Filesystems without hard links (some FUSE and SMB mounts): the lock is created with O_EXCL and written after. */
const LINK_UNSUPPORTED = new Set(['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS', 'EXDEV', 'EMLINK']);

export interface LockOptions {
  /** Written into the lock for whoever finds it taken: the command line of this run. */
  command: string;
  log: Logger;
  /** Wait up to this long for a live holder to finish; 0 = fail at once. */
  waitMs?: number;
  /** Poll interval while waiting. */
  pollMs?: number;
  signal?: AbortSignal;
  /** How often the holder touches its lock (its lease). */
  renewMs?: number;
  /** A lock held from another container or boot of this hostname, untouched this long, is taken over. */
  leaseMs?: number;
  /** Test seam: the identity this process records and judges from. */
  self?: ProcessIdentity;
}

export interface RunLock {
  readonly file: string;
  release(): Promise<void>;
}

/** What a lock file holds. */
interface LockRecord extends LockHolder, ProcessIdentity {
  token: string;
}

/** Tokens of the locks this process holds: a record of ours is alive whatever its pid looks like. */
const held = new Set<string>();

interface Seen {
  text: string;
  record: LockRecord | undefined;
  /** Changes when the holder renews its lease or the lock is replaced. */
  fingerprint: string;
}

async function readLock(file: string): Promise<Seen | undefined> {
  let handle;
  try {
    handle = await open(file, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  try {
    // Opened, then stat'ed: on NFS an open revalidates the attributes, so a renewal is seen.
    const st = await handle.stat();
    const text = await handle.readFile('utf8');
    return { text, record: parseRecord(text), fingerprint: `${st.ino}:${st.mtimeMs}:${text}` };
  } finally {
    await handle.close();
  }
}

function parseRecord(text: string): LockRecord | undefined {
  try {
    const parsed = JSON.parse(text) as Record<string, unknown>;
    const id = identityOf(parsed);
    if (!id) return undefined;
    return {
      ...id,
      since: String(parsed.since ?? '?'),
      command: String(parsed.command ?? '?'),
      token: typeof parsed.token === 'string' ? parsed.token : '',
    };
  } catch {
    return undefined; // half-written by a holder that could not use link() and was killed while writing
  }
}

/** Creates `file` holding `record` unless it exists; false when it exists. Other errors (no directory) throw. */
async function createExclusive(file: string, record: LockRecord): Promise<boolean> {
  const temp = await writeTemp(file, record);
  try {
    await link(temp, file);
    return true;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? '';
    if (code === 'EEXIST') return false;
    if (LINK_UNSUPPORTED.has(code)) return createWithoutLink(file, record);
    throw err;
  } finally {
    await rm(temp, { force: true });
  }
}

async function writeTemp(file: string, record: LockRecord): Promise<string> {
  const temp = `${file}.${record.token}.tmp`;
  const handle = await open(temp, 'w', 0o644);
  try {
    await handle.writeFile(JSON.stringify(record) + '\n');
    await handle.sync();
  } finally {
    await handle.close();
  }
  return temp;
}

async function createWithoutLink(file: string, record: LockRecord): Promise<boolean> {
  let handle;
  try {
    handle = await open(file, 'wx', 0o644);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  }
  try {
    await handle.writeFile(JSON.stringify(record) + '\n');
    await handle.sync();
  } finally {
    await handle.close();
  }
  return true;
}

/** Tells, per file, how long its content and attributes have stayed the same, on this process's monotonic clock. */
class LeaseWatch {
  private readonly seen = new Map<string, { fingerprint: string; since: number }>();
  constructor(private readonly leaseMs: number) {}

  /** Whether `file` has shown `fingerprint` for `leaseMs` now; starts watching a new fingerprint. */
  lapsed(file: string, fingerprint: string): boolean {
    const now = performance.now();
    const s = this.seen.get(file);
    if (!s || s.fingerprint !== fingerprint) {
      this.seen.set(file, { fingerprint, since: now });
      return false;
    }
    return now - s.since >= this.leaseMs;
  }
}

type Takeover = { taken: true } | { taken: false; busy?: LockRecord };

export async function acquireRunLock(file: string, opts: LockOptions): Promise<RunLock> {
  const me = opts.self ?? selfIdentity();
  const record = (): LockRecord => ({
    ...me,
    since: new Date().toISOString(),
    command: opts.command,
    token: randomBytes(8).toString('hex'),
  });
  const leaseMs = opts.leaseMs ?? LEASE_MS;
  const pollMs = opts.pollMs ?? 500;
  const watch = new LeaseWatch(leaseMs);
  const verdict = (r: LockRecord): Verdict => judgeHolder(r, me, held.has(r.token));
  const started = performance.now();
  const deadline = started + (opts.waitMs ?? 0);
  /** When each holder seen elsewhere was first seen: its lease is watched at least `leaseMs` from then. */
  const firstSeenElsewhere = new Map<string, number>();
  let announced: string | undefined;

  /** Races for the claim on `seen` (a dead or lapsed holder's record); the winner renames `mine` over it. */
  const takeOver = async (seen: Seen, mine: LockRecord): Promise<Takeover> => {
    const key = createHash('sha256').update(seen.text).digest('hex').slice(0, 16);
    let won = -1;
    try {
      for (let gen = 0, tries = 0; gen < MAX_CLAIM_GENERATIONS && tries < 4 * MAX_CLAIM_GENERATIONS; tries++) {
        const claim = `${file}.takeover-${key}-${gen}`;
        if (await createExclusive(claim, mine)) {
          won = gen;
          // Only the claimant of this record can replace it, and its holder is gone: if the lock still holds it,
          // nobody else replaced it, and nobody can until our rename.
          const now = await readLock(file);
          if (now?.text !== seen.text) return { taken: false };
          const temp = await writeTemp(file, mine);
          await rename(temp, file);
          return { taken: true };
        }
        const claimant = await readLock(claim);
        if (!claimant) continue; // the winner cleaned up: this generation is free again (and the lock changed)
        const v = claimant.record ? verdict(claimant.record) : 'alive';
        if (v === 'dead' || (v === 'elsewhere' && watch.lapsed(claim, claimant.fingerprint))) {
          gen++;
          continue;
        }
        return { taken: false, ...(claimant.record && { busy: claimant.record }) };
      }
      return { taken: false };
    } finally {
      // Once the lock no longer holds `seen`, every claim on it is garbage: a late taker that creates one again
      // finds the lock changed and gives up.
      for (let gen = 0; gen <= won; gen++) await rm(`${file}.takeover-${key}-${gen}`, { force: true });
    }
  };

  // One look at the lock: taken, or not yet (the wait before the next look), or given up on with the holder named.
  const look = async (): Promise<RunLock | NotYet> => {
    const mine = record();
    if (await createExclusive(file, mine)) return holding(file, mine, opts);
    const seen = await readLock(file);
    if (!seen) return notYet(0); // released between our create and our read: look again at once
    const holder = seen.record;
    const v = holder ? verdict(holder) : 'alive';
    const lapsed = v === 'elsewhere' && watch.lapsed(file, seen.fingerprint);
    let busy: LockRecord | undefined;
    if (v === 'dead' || lapsed) {
      opts.log.warn(
        `taking over the lock ${file}: its holder (pid ${holder!.pid}${holder!.host === me.host ? '' : ` on ${holder!.host}`}, since ${holder!.since}) ` +
          (v === 'dead'
            ? 'is no longer running'
            : `ran in another container or boot of ${holder!.host} and has not renewed its lease for ${Math.round(leaseMs / 1000)} s`),
      );
      const r = await takeOver(seen, mine);
      if (r.taken) return holding(file, mine, opts);
      if (!r.busy) return notYet(0); // someone else replaced it meanwhile: look again
      busy = r.busy;
    }
    const shown = busy ?? holder;
    let until = deadline;
    if (v === 'elsewhere' && holder) {
      // The lease is watched for at least `leaseMs`, whatever --wait says: a holder that is gone is taken over.
      const first = firstSeenElsewhere.get(holder.token) ?? performance.now();
      firstSeenElsewhere.set(holder.token, first);
      until = Math.max(until, first + leaseMs + pollMs);
    }
    const now = performance.now();
    if (now >= until) throw lockedBy(file, shown, v, me, leaseMs);
    const what = `${shown?.pid ?? '?'} on ${shown?.host ?? '?'}`;
    if (announced !== what) {
      opts.log.info(
        v === 'elsewhere'
          ? `the lock ${file} is held by pid ${what} from another container or boot: watching its lease (taken over if it is not renewed for ${Math.round(leaseMs / 1000)} s)`
          : `waiting for the lock ${file} (held by pid ${what})`,
      );
      announced = what;
    }
    return notYet(Math.min(pollMs, Math.max(1, until - now)));
  };
  // The deadline moves with what each look finds (a holder elsewhere is watched for its lease): the look decides
  // when to give up, and the poll only waits between looks.
  return pollUntil(look, {
    policy: new RetryPolicy({ attempts: Number.MAX_SAFE_INTEGER, baseMs: pollMs, maxMs: pollMs, factor: 1 }),
    timeoutMs: Number.POSITIVE_INFINITY,
    timedOut: () => new Error('unreachable: the look gives up by itself'),
    ...(opts.signal && { signal: opts.signal }),
  });
}

/** The lock taken: renewed while held, removed on release if it is still ours. */
function holding(file: string, mine: LockRecord, opts: LockOptions): RunLock {
  held.add(mine.token);
  const renew = setInterval(() => {
    const now = new Date();
    // A lock taken over from us (we were presumed gone) is not ours to keep alive, but touching it harms nothing.
    utimes(file, now, now).catch(() => undefined);
  }, opts.renewMs ?? RENEW_MS);
  renew.unref();
  let released = false;
  return {
    file,
    async release() {
      if (released) return;
      released = true;
      clearInterval(renew);
      held.delete(mine.token);
      // Only our own lock is removed: a lock taken over after we were presumed dead is not ours any more.
      const now = await readLock(file).catch(() => undefined);
      if (now?.record?.token === mine.token) await rm(file, { force: true });
    },
  };
}

/** The run could not take the lock: another live run holds it. Its exit code (3) is its own, for cron. */
function lockedBy(
  file: string,
  holder: LockRecord | undefined,
  verdict: Verdict,
  me: ProcessIdentity,
  leaseMs: number,
): LockedError {
  const shown: LockHolder | undefined = holder && {
    pid: holder.pid,
    host: holder.host,
    since: holder.since,
    command: holder.command,
  };
  const where =
    verdict === 'elsewhere'
      ? ` (another container or boot of ${holder!.host}, which renewed its lease within the last ${Math.round(leaseMs / 1000)} s)`
      : '';
  return new LockedError(
    shown
      ? `${file} is locked by pid ${shown.pid} on ${shown.host}${where} since ${shown.since} (${shown.command})`
      : `${file} is locked by another run (its lock file could not be read)`,
    {
      file,
      ...(shown && { holder: shown }),
      hint:
        'another run of this pipeline is in progress: let it finish, or pass --wait (e.g. --wait=10m) to wait for ' +
        `it; if no such process exists${shown && shown.host !== me.host ? ` on ${shown.host}` : ''}, delete ${file}`,
    },
  );
}

/** Test seam: the record a lock file holds, as this module reads it. */
export async function readLockRecord(file: string): Promise<(LockHolder & ProcessIdentity) | undefined> {
  return parseRecord(await readFile(file, 'utf8'));
}
