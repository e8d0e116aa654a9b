/**
 * Failpoints: named places in the commit paths, the one way a test strikes there. A crash test makes the process die
 * on the spot, with a real SIGKILL (no `finally`, no exit handlers, nothing flushed), to prove that a rerun ends with
 * every record exactly once wherever a kill -9 or a power cut strikes; an in-process test arms a place with an
 * action (`armFailpoint`) — a throw there is a failure at that moment, a wait there is a commit under way.
 *
 *   SLUICE_FAILPOINTS="duckdb:after-data=3"          dies on the 3rd time a unit's rows are in and its checkpoint not
 *   SLUICE_FAILPOINTS="download:body=65536"          dies once a unit's body has delivered 64 KiB
 *
 * `name` alone means the first hit. Several may be given, comma-separated. The number counts what the failpoint
 * counts: hits for most, bytes (or another amount, see FAILPOINTS) for those called with an amount.
 *
 * The variable is read once, when this module loads; unset, a failpoint costs one comparison.
 */
import { writeSync } from 'node:fs';
import { SluiceError } from './errors.js';

/** Every failpoint, with where it strikes. Names are `<area>:<moment>`. */
export const FAILPOINTS = {
  'snapshot:job-started':
    'the paid filter job answered with its snapshot id, before the id is checkpointed in the state file',
  'snapshot:job-checkpointed': 'the filter job’s snapshot id is checkpointed, before the snapshot is polled',
  'download:body': 'amount = bytes of one unit’s body received so far (compressed, as on the wire)',
  'crawl:successor-recorded': 'a crawl page’s successor is checkpointed, before the page’s rows are committed',
  'engine:after-commit': 'a unit committed in every sink, before the engine schedules the pages it discovered',
  'engine:before-complete': 'every sink finished (replace swapped in), before the run is marked complete',
  'state:before-rename': 'the state file’s new version is written and synced, before it is renamed into place',
  'duckdb:after-data': 'a unit’s rows are inserted in its transaction, before its `_sluice_state` row and COMMIT',
  'duckdb:replace-swap': 'replace: the new table is renamed into place in the swap transaction, before COMMIT',
  'postgres:mid-copy': 'amount = characters of one unit’s COPY data sent so far, inside its transaction',
  'postgres:after-data': 'a unit’s rows are copied in its transaction, before its `_sluice_state` row and COMMIT',
  'postgres:before-commit': 'a unit’s rows and its `_sluice_state` row are in its transaction, before COMMIT',
  'clickhouse:mid-insert':
    'amount = characters of one unit’s rows sent to its staging table so far (TabSeparated text, before its insert ends)',
  'clickhouse:after-intent':
    'a unit’s rows are staged and its `publishing` state row written, before the ATTACH that makes them visible',
  'clickhouse:after-attach': 'a unit’s rows are attached to the table (visible), before its `committed` state row',
  'clickhouse:replace-swap': 'replace: the `swapping` marker is written, before the RENAME that swaps the tables',
  'clickhouse:after-swap': 'replace: the tables are swapped, before the old one is dropped and the state rows moved',
  'files:before-manifest':
    'a file commit’s temp files and its `.pending` marker are synced, before the manifest records the commit',
  'files:after-manifest': 'the manifest records a file commit, before its first file is renamed into place',
  'files:after-rename':
    'one file of a recorded commit is renamed into place (counts renames), before its marker is removed',
  'files:mid-upload':
    'amount = bytes of one object uploaded to S3 so far (a temp or staging object), before its upload completes: ' +
    'after each part of a multipart upload, or just before the one request of an object of 8 MB or less',
  'compact:written':
    'compaction: a partition’s new files are written (to the temp area, not yet uploaded), before their commit',
  'compact:after-remove':
    'compaction: one replaced small file is removed after the manifest swap (counts removals; on S3 a batch of ' +
    'up to 1,000), before the commit’s marker is removed',
  'parquet:staged': 'a unit’s staging file is written and synced, before the manifest records the unit as staged',
  'replace:before-swap':
    'replace (file sinks): the new symlink is made beside the output, before it is renamed over it',
  'replace:after-swap': 'replace (file sinks): the output links to the new generation, before the old one is deleted',
} as const;

export type FailpointName = keyof typeof FAILPOINTS;

export const FAILPOINTS_ENV = 'SLUICE_FAILPOINTS';

interface Armed {
  /** The hit (or amount) at which the process dies. */
  at: number;
  hits: number;
}

/** Parses `name[=N],…`; throws a SluiceError naming what is wrong. */
export function parseFailpoints(spec: string | undefined): Map<string, Armed> | undefined {
  if (spec === undefined || spec.trim() === '') return undefined;
  const armed = new Map<string, Armed>();
  for (const item of spec.split(',')) {
    const text = item.trim();
    if (text === '') continue;
    const m = /^([a-z-]+:[a-z-]+)(?:=(\d+))?$/.exec(text);
    const name = m?.[1];
    if (!m || name === undefined || !Object.hasOwn(FAILPOINTS, name))
      throw new SluiceError(`${FAILPOINTS_ENV}: "${text}" is not a failpoint`, {
        hint: `unset ${FAILPOINTS_ENV} (it is for crash tests), or write name[=N] with one of: ${Object.keys(FAILPOINTS).join(', ')}`,
      });
    const at = m[2] === undefined ? 1 : Number(m[2]);
    if (at < 1)
      throw new SluiceError(`${FAILPOINTS_ENV}: "${text}": the count starts at 1`, {
        hint: `write ${name}=1 (or just ${name}) for the first hit`,
      });
    armed.set(name, { at, hits: 0 });
  }
  return armed.size > 0 ? armed : undefined;
}

const armed = parseFailpoints(process.env[FAILPOINTS_ENV]);

/**
 * Dies here if `name` is armed and its moment has come: on its N-th hit, or — when called with `amount` — once
 * `amount` reaches N.
 */
export function failpoint(name: FailpointName, amount?: number): void {
  if (armed === undefined) return;
  const fp = armed.get(name);
  if (fp === undefined) return;
  if (amount === undefined ? ++fp.hits < fp.at : amount < fp.at) return;
  // Written synchronously, so the line is out before the signal: the crash test tells this death from others.
  writeSync(2, `failpoint ${name} reached: killing the process (SIGKILL)\n`);
  process.kill(process.pid, 'SIGKILL');
}

/** What a test does where a failpoint strikes in this process: told the unit (where the place has one). */
export type FailpointAction = (at: { unit?: string }) => void | Promise<void>;

/** Armed by tests of this process (each test file runs in a process of its own): never set by sluice itself. */
const actions = new Map<FailpointName, FailpointAction>();

/** Tests: runs `action` each time `name` is reached in this process, until the returned function disarms it. */
export function armFailpoint(name: FailpointName, action: FailpointAction): () => void {
  actions.set(name, action);
  return () => {
    if (actions.get(name) === action) actions.delete(name);
  };
}

/**
 * A failpoint inside a commit, where a test may act (async: a commit under way may be held there): a test's action
 * runs, then the process dies if the environment armed the place.
 */
export async function atFailpoint(name: FailpointName, unit?: string): Promise<void> {
  const action = actions.get(name);
  if (action) await action(unit === undefined ? {} : { unit });
  failpoint(name);
}
