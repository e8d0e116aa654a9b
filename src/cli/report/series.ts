/**
 * The run history as the report's series: one point per attempt, a value or a gap. runs.jsonl is read by the one
 * reader (operations/history.ts: lines cut short skipped, `null` or a list too), but its fields are untrusted: other
 * versions of sluice write more fields, fewer, or the same ones with other types. Whatever a field holds, a point is
 * a finite number or a gap (undefined), and nothing here throws.
 */
import type { StateChange } from '../../operations/history.js';

export type Status = 'succeeded' | 'failed' | 'interrupted' | 'crashed' | 'running' | 'unknown';

/** One attempt, as far as the report needs it. */
export interface RunPoint {
  run: string;
  attempt: number;
  status: Status;
  startedAt?: Date;
  cause?: string;
  exitCode?: number;
  resumed: boolean;
  /** A backfill (`sluice run --from`), with the window it reloaded as runs.jsonl writes it. */
  backfill?: { from?: string; to?: string };
  /** The whole line as read, for series that look further. */
  raw: Record<string, unknown>;
}

/** A change made by hand between runs (`sluice state set/reset/drop`), as runs.jsonl records it. */
export interface StateChangeMark {
  kind: 'state-set' | 'state-reset' | 'state-drop';
  at: Date;
  /** One line: what changed. */
  what: string;
  /** `user@host`. */
  by?: string;
}

export interface Series {
  /** Stable id: `data-series` in the page, and what the test reads. */
  id: string;
  label: string;
  unit: 'count' | 'ms' | 'bytes';
  values: (number | undefined)[];
  /** A colour of its own (failures in red), instead of the palette's next. */
  color?: string;
}

export interface Chart {
  id: string;
  title: string;
  /** What the chart shows and where the numbers come from. */
  about: string;
  kind: 'bars' | 'lines';
  series: Series[];
}

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);

/** A count or duration: finite numbers only (a string, NaN or null is a gap). */
export function num(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

const STATUSES: readonly Status[] = ['succeeded', 'failed', 'interrupted', 'crashed', 'running'];

/** The changes made by hand (operations/history.ts reads them), as the page marks them, oldest first. */
export function stateChangeMarks(changes: readonly StateChange[]): StateChangeMark[] {
  return changes
    .map((c) => ({
      kind: c.kind,
      at: new Date(c.at),
      what: typeof c.what === 'string' ? c.what : String(c.kind),
      ...(typeof c.by === 'string' && { by: c.by }),
    }))
    .sort((a, b) => a.at.getTime() - b.at.getTime());
}

/** How many of `points` (oldest first) started before `at`: a change sits after that many attempts. */
export function attemptsBefore(points: readonly RunPoint[], at: Date): number {
  let n = 0;
  points.forEach((p, i) => {
    if (p.startedAt && p.startedAt.getTime() <= at.getTime()) n = i + 1;
  });
  return n;
}

function windowOf(raw: Obj): { from?: string; to?: string } {
  const w = isObj(raw.window) ? raw.window : {};
  const text = (v: unknown): string | undefined =>
    typeof v === 'string' || typeof v === 'number' ? String(v) : undefined;
  const from = text(w.from);
  const to = text(w.to);
  return { ...(from !== undefined && { from }), ...(to !== undefined && { to }) };
}

export function toPoint(raw: Obj): RunPoint {
  const started = typeof raw.startedAt === 'string' ? new Date(raw.startedAt) : undefined;
  return {
    ...(raw.kind === 'backfill' && { backfill: windowOf(raw) }),
    run: String(raw.run),
    attempt: num(raw.attempt) ?? 1,
    status: STATUSES.includes(raw.status as Status) ? (raw.status as Status) : 'unknown',
    startedAt: started && !Number.isNaN(started.getTime()) ? started : undefined,
    cause: typeof raw.cause === 'string' ? raw.cause : undefined,
    exitCode: num(raw.exitCode),
    resumed: raw.resumed === true,
    raw,
  };
}

/** The attempt's duration; a gap while it runs or when either end is missing or unreadable. */
export function durationMs(p: RunPoint): number | undefined {
  const end = typeof p.raw.endedAt === 'string' ? Date.parse(p.raw.endedAt) : NaN;
  if (!p.startedAt || Number.isNaN(end)) return undefined;
  return Math.max(0, end - p.startedAt.getTime());
}

function list(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}

/**
 * Records the service charged during the attempt, as the run history records them (`recordsCharged`, from the
 * attempt's ledger of paid work: state/paid-ledger.ts); a gap for lines written before.
 */
export function recordsCharged(p: RunPoint): number | undefined {
  return num(p.raw.recordsCharged);
}

/**
 * Calls the service billed during the attempt, every kind together (`paidCalls`, from its ledger of paid work:
 * filter jobs, deep lookups, enrichments, `POST /request` pages). Lines written before the ledger count the paid
 * jobs they list; a gap for lines older still. The one place the report counts paid work.
 */
export function paidCalls(p: RunPoint): number | undefined {
  const billed = num(p.raw.paidCalls);
  if (billed !== undefined) return billed;
  return Array.isArray(p.raw.paidJobs) ? p.raw.paidJobs.length : undefined;
}

/**
 * Columns added or widened in the attempt. runs.jsonl writes `schemaChanges` only when there were some: an attempt
 * that recorded its counts (`units`) and none is 0; a line without counts (cut short, or older) is a gap.
 */
export function schemaChangeCount(p: RunPoint): number | undefined {
  if (!Array.isArray(p.raw.schemaChanges)) return isObj(p.raw.units) ? 0 : undefined;
  return p.raw.schemaChanges.reduce<number>((n, c) => n + (isObj(c) ? list(c.changes).length : 0), 0);
}

/** Each sink's name as runs name it (`sink.describe()`), in order of first appearance. */
export function sinkNames(points: readonly RunPoint[]): string[] {
  const names: string[] = [];
  for (const p of points)
    for (const s of list(p.raw.sinks))
      if (isObj(s) && typeof s.sink === 'string' && !names.includes(s.sink)) names.push(s.sink);
  return names;
}

/**
 * What a run committed into one sink: its records when the line says (newer versions), else its units. Which one
 * is decided for the whole history, so one chart never mixes the two.
 */
function perSink(points: readonly RunPoint[], name: string, key: 'records' | 'committedUnits') {
  return points.map((p) => {
    const entry = list(p.raw.sinks).find((s) => isObj(s) && s.sink === name) as Obj | undefined;
    return entry ? num(entry[key]) : undefined;
  });
}

/**
 * Every field runs.jsonl writes (state/run-history.ts `RunRecord`): charted, shown in the table, or not a figure (who
 * ran it, where). Any other numeric field — written by a newer sluice — gets a chart of its own.
 */
const KNOWN = new Set([
  'run',
  'attempt',
  'pipeline',
  'status',
  'cause',
  'exitCode',
  'startedAt',
  'endedAt',
  'resumed',
  'pid',
  'host',
  'boot',
  'pidns',
  'start',
  'command',
  'kind',
  'window',
  'units',
  'records',
  'recordsRead',
  'bytes',
  'retries',
  'deadLetters',
  'deadLetterReasons',
  'paidJobs',
  'recordsCharged',
  'sinks',
  'schemaChanges',
  // The attempt's ledger of paid work (core/paid-work.ts): its billed calls, and their lines by kind and purpose.
  'paidCalls',
  'paid',
  'checks',
  'warnings',
]);

/**
 * Numeric fields the report does not know (added by a newer sluice: committed vs retried records, check results…),
 * one level into objects (`checks.failed`), as series of their own: new facts show up without a change here.
 */
function otherSeries(points: readonly RunPoint[]): Series[] {
  const found = new Map<string, Series>();
  const add = (id: string, i: number, v: number): void => {
    let s = found.get(id);
    if (!s) found.set(id, (s = { id: `field:${id}`, label: id, unit: 'count', values: points.map(() => undefined) }));
    s.values[i] = v;
  };
  points.forEach((p, i) => {
    for (const [k, v] of Object.entries(p.raw)) {
      if (KNOWN.has(k)) continue;
      if (num(v) !== undefined) add(k, i, v as number);
      else if (isObj(v))
        for (const [k2, v2] of Object.entries(v)) if (num(v2) !== undefined) add(`${k}.${k2}`, i, v2 as number);
    }
  });
  return [...found.values()].slice(0, 12);
}

export function charts(points: readonly RunPoint[]): Chart[] {
  const field = (key: string) => points.map((p) => num(p.raw[key]));
  const units = (key: 'committed' | 'skipped' | 'failed') =>
    points.map((p) => (isObj(p.raw.units) ? num(p.raw.units[key]) : undefined));
  const sinks = sinkNames(points);
  const sinkRecords = sinks.some((n) => perSink(points, n, 'records').some((v) => v !== undefined));
  const out: Chart[] = [
    {
      id: 'records',
      title: 'Records committed and read',
      about:
        'Records the attempt committed (runs.jsonl `records`) and read (`recordsRead`: tries that failed or were not committed included).',
      kind: 'bars',
      series: [
        { id: 'records', label: 'committed', unit: 'count', values: field('records') },
        { id: 'records-read', label: 'read', unit: 'count', values: field('recordsRead') },
      ],
    },
    {
      id: 'sinks',
      title: sinkRecords ? 'Records per sink' : 'Units committed per sink',
      about: sinkRecords
        ? 'Records each sink committed (runs.jsonl `sinks[].records`).'
        : 'Work units each sink committed in the attempt (runs.jsonl `sinks[].committedUnits`).',
      kind: 'lines',
      series: sinks.map((name, i) => ({
        id: `sink:${i}`,
        label: name,
        unit: 'count',
        values: perSink(points, name, sinkRecords ? 'records' : 'committedUnits'),
      })),
    },
    {
      id: 'duration',
      title: 'Duration',
      about: 'From start to end of each attempt (runs.jsonl `startedAt` → `endedAt`).',
      kind: 'bars',
      series: [{ id: 'duration', label: 'duration', unit: 'ms', values: points.map(durationMs) }],
    },
    {
      id: 'bytes',
      title: 'Bytes read',
      about: 'Bytes read from the service or the input files sluice decoded (runs.jsonl `bytes`).',
      kind: 'bars',
      series: [{ id: 'bytes', label: 'bytes', unit: 'bytes', values: field('bytes') }],
    },
    {
      id: 'units',
      title: 'Units by outcome',
      about:
        'Work units the attempt committed, found committed by an earlier attempt (skipped) and failed (runs.jsonl `units`).',
      kind: 'bars',
      series: [
        { id: 'units-committed', label: 'committed', unit: 'count', values: units('committed') },
        { id: 'units-skipped', label: 'skipped', unit: 'count', values: units('skipped') },
        { id: 'units-failed', label: 'failed', unit: 'count', values: units('failed'), color: '#d33c3c' },
      ],
    },
    {
      id: 'problems',
      title: 'Dead letters and retries',
      about: 'Records set aside as dead letters (`deadLetters`) and requests retried (`retries`).',
      kind: 'bars',
      series: [
        { id: 'dead-letters', label: 'dead letters', unit: 'count', values: field('deadLetters') },
        { id: 'retries', label: 'retries', unit: 'count', values: field('retries') },
      ],
    },
    // Paid calls and records charged differ by orders of magnitude: each on an axis of its own.
    {
      id: 'paid',
      title: 'Paid calls',
      about:
        'Calls the service billed during each attempt (runs.jsonl `paidCalls`: filter jobs, deep lookups, ' +
        'enrichments, `POST /request` pages).',
      kind: 'bars',
      series: [{ id: 'paid-calls', label: 'paid calls', unit: 'count', values: points.map(paidCalls) }],
    },
    {
      id: 'charged',
      title: 'Records charged',
      about: 'Records the service charged during the attempt (runs.jsonl `recordsCharged`).',
      kind: 'bars',
      series: [{ id: 'records-charged', label: 'records charged', unit: 'count', values: points.map(recordsCharged) }],
    },
    {
      id: 'changes',
      title: 'Schema changes',
      about: 'Columns the attempt added or widened in any sink (runs.jsonl `schemaChanges`).',
      kind: 'bars',
      series: [{ id: 'schema-changes', label: 'schema changes', unit: 'count', values: points.map(schemaChangeCount) }],
    },
  ];
  const more = otherSeries(points);
  for (let i = 0; i < more.length; i += 2)
    out.push({
      id: `more-${i / 2}`,
      title: more
        .slice(i, i + 2)
        .map((s) => s.label)
        .join(' and '),
      about: 'A figure this report does not know by name, as runs.jsonl records it.',
      kind: 'bars',
      series: more.slice(i, i + 2),
    });
  return out;
}
