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
import type { UnitGroups } from './group.js';
import { readJsonRefusal } from './read.js';
import { discard, stageRawJsonl, type StagedUnit } from './stage.js';

const SINK = 'duckdb sink';

/**
 * Loads the raw file, refusing it (before anything is written) when it is not JSONL as a whole. With `groups`, the
 * staged file is committed with a group of units (group.ts), and `read` is told once it is staged; without (a
 * `merge`), in a transaction of its own.
 */
export async function commitRawFile(
  s: CommitScope,
  unit: WorkUnit,
  file: RawFile,
  commit: UnitCommit,
  check: RecordCheck | undefined,
  isCommitted: () => Promise<boolean>,
  groups?: { groups: UnitGroups; read?: () => void },
): Promise<CommitResult> {
  refuseUnlessJsonl(SINK, file);
  if (await isCommitted()) return { committed: false, records: 0 };
  const left = groups?.groups.readingOne();
  let staged: StagedUnit;
  try {
    const judge = check ?? new RecordJudge(duckdbLimits(s.config));
    staged = await stageRawJsonl(file.path, await s.session.staging.file(unit.id), judge, maxLineBytesOf(file));
  } catch (err) {
    left?.();
    throw asNativeRefusal(SINK, err);
  }
  try {
    if (groups) {
      // Queued before this unit stops counting as on its way, so its group cannot commit without it.
      const committed = groups.groups.commit(unit, staged, commit);
      groups.read?.();
      left!();
      return await committed;
    }
    return await commitStaged(s, unit, staged, commit);
  } catch (err) {
    const text = err instanceof NativeLoadRefused ? undefined : readJsonRefusal(err);
    if (text !== undefined) throw new NativeLoadRefused(SINK, text, err);
    throw err;
  } finally {
    await discard(staged);
  }
}
