/**
 * Run ids: a run's start to the millisecond and a random suffix. The cursor orders runs' checkpoints by them
 * (runtime/cursor.ts: the newest run's checkpoint of a unit wins), and cursor changes made by hand take a mark that
 * sorts like one (cursor-base.ts).
 */
import { randomBytes } from 'node:crypto';

/**
 * When a run with this id (newRunId) started; undefined for an id of another form. Ids of earlier versions give the
 * start to the second (`20261123194100-a1b2c3`), today's to the millisecond (`20261123194100123-a1b2c3`).
 */
export function runStartedAt(runId: string): Date | undefined {
  const m = /^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})(\d{3})?-/.exec(runId);
  return m ? new Date(`${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6]}.${m[7] ?? '000'}Z`) : undefined;
}

/**
 * A run's id: its start to the millisecond, then a random suffix: `20261123194100123-a1b2c3`. The cursor orders the
 * runs' checkpoints by these ids (runtime/cursor.ts: the newest run's checkpoint of a unit wins), so an id must sort
 * after the id of the pipeline's run before it (`previous`): never before it when two runs start in one second or
 * millisecond, or the clock went back; a later millisecond than the previous start is taken then. An id of an
 * earlier version (to the second) sorts before every id of the same second with milliseconds ('-' < '0').
 */
export function newRunId(now: Date, previous?: string): string {
  const before = previous === undefined ? undefined : runStartedAt(previous);
  const ms = before === undefined ? now.getTime() : Math.max(now.getTime(), before.getTime() + 1);
  const stamp = new Date(ms)
    .toISOString()
    .replace(/[-:.TZ]/g, '')
    .slice(0, 17);
  return `${stamp}-${randomBytes(3).toString('hex')}`;
}
