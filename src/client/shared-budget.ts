/**
 * One 429 budget for the processes that share an egress address: the shards of one pipeline (`--shard i/n`), each a
 * process of its own, on one machine or on several behind one NAT. The service counts 429s per IP (25 within five
 * minutes block it, docs/service.md §6), so N shards each keeping its own budget of 20 could block themselves
 * together. There is no coordinator to run: the shards already share the pipeline's state directory (on one machine,
 * or on the shared volume their locks live on), and the budget goes through it.
 *
 * Each process keeps one file there that only it writes: when it joined, its 429 answers (when, and until when it
 * holds after them), and when it left. No file has two writers, so nothing needs a lock, and appends need no
 * atomicity across machines. Every process reads the others' files (at most every `REFRESH_MS`) and its throttle
 * (throttle.ts) then counts every 429 in the window, its own and the others', holds while any of them asked for a
 * hold, and lets itself have in flight at most its share of what is left of the budget (`shareOf`). The shares of
 * the members add up to what is left, so even if every request of every member in flight were refused at once, the
 * window would hold at most the budget.
 *
 * Members: the n shards of the run, each counted from the start whether or not its process has written anything
 * yet (shards start together: none may take the others' part before they show up), and any other process that
 * joined (`sluice prepare`, whose 429s count for the shards that follow it). A member that left (its client closed:
 * it sends nothing more) hands its part to the others; so does one whose file has not been touched for
 * `MEMBER_TTL_MS` (a process killed with -9; a live one touches its file every `HEARTBEAT_MS`). A shard that joins
 * again while the others run takes its part back as they next read the files: until their requests in flight then
 * end, the members together may have a few more at risk than the budget, which the 5 answers between the budget (20)
 * and the block (25) cover, as they cover a peer's 429 seen up to `REFRESH_MS` late.
 *
 * Times in the files are this machine's clock (milliseconds since the epoch), as the throttle's; machines whose
 * clocks differ by seconds shift a five-minute window by that much, which the same margin covers.
 */
import { appendFileSync, mkdirSync, readFileSync, readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** Which of `count` members this process is (0-based): its part of what is left is `shareOf(left, share)`. */
export interface Share {
  index: number;
  count: number;
}

/** What the throttle sees of the processes its budget is shared with. */
export interface BudgetView {
  /** The others' 429s answered after `since`. */
  count: number;
  /** The latest time until which one of them asked all to hold. */
  holdUntil: number;
  /** This process's place among the members now. */
  share: Share;
}

/** What a throttle knows of the processes it shares its budget with. */
export interface BudgetPeers {
  view(since: number, now: number): BudgetView;
  /** Tells the others of one 429 this process got at `at`, after which it holds until `holdUntil`. */
  record(at: number, holdUntil: number): void;
  /** This process sends nothing more: its part goes to the others. */
  leave(at: number): void;
}

/**
 * This process's part of `left` 429s that may still be risked: an equal share, the remainder going to the lowest
 * indexes, so the parts of all `count` members add up to exactly `left`.
 */
export function shareOf(left: number, share: Share): number {
  if (left <= 0) return 0;
  return Math.floor(left / share.count) + (share.index < left % share.count ? 1 : 0);
}

/** How often the others' files are read again at most: a peer's 429 is seen this much later at worst. */
export const REFRESH_MS = 20;
/** A member touches its file this often while it lives… */
export const HEARTBEAT_MS = 10_000;
/** …and one whose file is older than this is taken for gone (killed, its machine lost). */
export const MEMBER_TTL_MS = 60_000;
const SUFFIX = '.429';

interface Entry {
  at: number;
  holdUntil: number;
}

interface Member {
  name: string;
  entries: Entry[];
  /** Its last line said it left. */
  left: boolean;
  /** When its file was last touched (this machine's clock), or undefined when it has none yet. */
  touched: number | undefined;
}

/**
 * The budget through a directory the processes share: one file per process, `<self>.429`. `self` is the same when
 * the process runs again (a shard's `shard-2-of-4`), so a shard run again within five minutes still counts the
 * 429s it got before.
 */
export class FileBudgetPeers implements BudgetPeers {
  private readonly own: string;
  /** This member's own 429s from before this process started (its throttle starts without them). */
  private readonly earlier: Entry[];
  private cache: { at: number; members: Member[] } | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  private warned = false;

  /**
   * `dir`: the shared directory (created); `shards`: the names of the run's shards in index order (this process's
   * among them when it is one), none for a process that is no shard; `windowMs`: this member's entries older than
   * this are dropped as it joins.
   */
  constructor(
    private readonly dir: string,
    private readonly self: string,
    private readonly shards: readonly string[],
    private readonly log: { warn(msg: string): void },
    now: number,
    windowMs: number,
  ) {
    this.own = path.join(dir, `${self}${SUFFIX}`);
    mkdirSync(dir, { recursive: true });
    this.earlier = readMember(this.own, self).entries.filter((e) => e.at > now - windowMs);
    writeFileSync(this.own, `joined ${Math.round(now)}\n${this.earlier.map(line).join('')}`, { mode: 0o600 });
    this.heartbeat = setInterval(() => this.touch(), HEARTBEAT_MS);
    this.heartbeat.unref();
  }

  view(since: number, now: number): BudgetView {
    if (this.cache === undefined || now - this.cache.at >= REFRESH_MS) this.cache = { at: now, members: this.read() };
    let count = 0;
    let holdUntil = -Infinity;
    for (const e of this.earlier) {
      if (e.at > since) count++;
      if (e.holdUntil > holdUntil) holdUntil = e.holdUntil;
    }
    // The members: the run's shards (each until it left or went silent), then any other process still here.
    const wall = Date.now();
    const present = (m: Member | undefined): boolean =>
      m === undefined || (!m.left && (m.touched === undefined || wall - m.touched < MEMBER_TTL_MS));
    const byName = new Map(this.cache.members.map((m) => [m.name, m]));
    const names = this.shards.filter((n) => n === this.self || present(byName.get(n)));
    for (const m of this.cache.members) {
      if (m.name !== this.self) {
        for (const e of m.entries) {
          if (e.at > since) count++;
          if (e.holdUntil > holdUntil) holdUntil = e.holdUntil;
        }
      }
      if (!this.shards.includes(m.name) && (m.name === this.self || present(m))) names.push(m.name);
    }
    if (!names.includes(this.self)) names.push(this.self);
    return { count, holdUntil, share: { index: names.indexOf(this.self), count: names.length } };
  }

  record(at: number, holdUntil: number): void {
    this.write(line({ at, holdUntil }), 'tell the other shards of a 429');
  }

  leave(at: number): void {
    clearInterval(this.heartbeat);
    this.heartbeat = undefined;
    this.write(`left ${Math.round(at)}\n`, 'hand this shard’s part of the 429 budget to the others');
  }

  private touch(): void {
    try {
      const t = new Date();
      utimesSync(this.own, t, t);
    } catch (err) {
      this.warnOnce(
        `could not show the other shards this one is still running (${this.own}): ${(err as Error).message}`,
      );
    }
  }

  private write(text: string, what: string): void {
    try {
      appendFileSync(this.own, text, { mode: 0o600 });
    } catch (err) {
      this.warnOnce(`could not ${what} through ${this.own}: ${(err as Error).message}`);
    }
  }

  private read(): Member[] {
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch (err) {
      this.warnOnce(`could not read the other shards' 429s in ${this.dir}: ${(err as Error).message}`);
      return [];
    }
    return names
      .filter((n) => n.endsWith(SUFFIX))
      .map((n) => readMember(path.join(this.dir, n), n.slice(0, -SUFFIX.length)));
  }

  private warnOnce(msg: string): void {
    if (this.warned) return;
    this.warned = true;
    this.log.warn(`${msg}; the shards' shared 429 budget may not see this one`);
  }
}

function line(e: Entry): string {
  return `${Math.round(e.at)} ${Math.round(e.holdUntil)}\n`;
}

/** A member's file; a missing one has nothing, and a line cut short by a crash is skipped. */
function readMember(file: string, name: string): Member {
  let text: string;
  let touched: number | undefined;
  try {
    text = readFileSync(file, 'utf8');
    touched = statSync(file).mtimeMs;
  } catch {
    return { name, entries: [], left: false, touched: undefined };
  }
  const entries: Entry[] = [];
  let left = false;
  for (const l of text.split('\n')) {
    const m = /^(\d+) (-?\d+)$/.exec(l);
    if (m) entries.push({ at: Number(m[1]), holdUntil: Number(m[2]) });
    else if (/^left \d+$/.test(l)) left = true;
    else if (/^joined \d+$/.test(l)) left = false;
  }
  return { name, entries, left, touched };
}
