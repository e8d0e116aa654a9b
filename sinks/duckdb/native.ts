/**
 * The native JSONL load: a unit's raw JSONL file (gzip or not), checked line by line — each record judged by the
 * engine's check — staged as it is and loaded by `read_json`. Apart from the rows path because its failures mean
 * something else: what the check or `read_json` refuses in the file's text is `NativeLoadRefused`, and the engine
 * decodes the file in JS instead.
 */
import { NativeLoadRefused } from '../../src/core/errors.js';
import type { CommitResult, RawFile, RecordCheck, UnitCommit, WorkUnit } from '../../src/core/types.js';
import { RecordJudge } from '../../src/schema/storable.js';
import { maxLineBytesOf } from '../../src/sink-kit/raw-jsonl/lines.js';
import { asNativeRefusal, refuseUnlessJsonl } from '../../src/sink-kit/raw-jsonl/refusal.js';
import { commitStaged, type CommitScope } from './commit.js';
import { duckdbLimits } from './config.js';
import { discard, stageRawJsonl, type StagedUnit } from './stage.js';

const SINK = 'duckdb sink';

/** Loads the raw file, refusing it (before anything is written) when it is not JSONL as a whole. */
export async function commitRawFile(
  s: CommitScope,
  unit: WorkUnit,
  file: RawFile,
  commit: UnitCommit,
  check: RecordCheck | undefined,
  isCommitted: () => Promise<boolean>,
): Promise<CommitResult> {
  refuseUnlessJsonl(SINK, file);
  if (await isCommitted()) return { committed: false, records: 0 };
  let staged: StagedUnit;
  try {
    const judge = check ?? new RecordJudge(duckdbLimits(s.config));
    staged = await stageRawJsonl(file.path, await s.session.staging.file(unit.id), judge, maxLineBytesOf(file));
  } catch (err) {
    throw asNativeRefusal(SINK, err);
  }
  try {
    return await commitStaged(s, unit, staged, commit);
  } catch (err) {
    const text = readJsonRefusal(err);
    if (text !== undefined) throw new NativeLoadRefused(SINK, text, err);
    throw err;
  } finally {
    await discard(staged);
  }
}

/**
 * `read_json`'s refusal of a raw file's text (a failure of the native load, not of the table or the database): the
 * first line of its message, or undefined for any other error. Duplicate keys in an object, which JSON.parse reads
 * as the last, are one.
 */
function readJsonRefusal(err: unknown): string | undefined {
  for (let e = err, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++) {
    const line = e.message.split('\n')[0] ?? '';
    if (/^Invalid Input Error: JSON transform error/.test(line) || /has duplicate key/.test(line))
      return `read_json refused it: ${line.replace(/^Invalid Input Error: /, '').slice(0, 300)}`;
  }
  return undefined;
}
