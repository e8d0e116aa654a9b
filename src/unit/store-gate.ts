/**
 * The store gate: one per sink and unit, before the schema-contract gate (schema-gate.ts) and the sink, judging every
 * record against what the sink's store can hold (its `capabilities.limits`, applied by the one judge,
 * schema/storable.ts). A record the store cannot hold goes to the dead letters — its reason names the record's index
 * in the unit and the limit — or, under `on_unstorable: repair`, goes on repaired, which the log reports once per
 * unit. The rest of the unit goes on: one record never fails its unit, and nothing that reaches a sink can fail its
 * commit or a later publish for what it holds.
 *
 * Each sink has one judge for the whole run (`SinkJudges`): names one unit brought are the store's for every other
 * unit, including units running at once. Its native load gets the same judge (`Sink.writeUnitFile`'s `check`).
 */
import type { Batch, DeadLetter, DeadLetterFn, Logger, Row, Sink, UnstorablePolicy } from '../core/types.js';
import { RecordJudge } from '../schema/storable.js';

/** Each sink's judge for a run, made at its first unit (after `open()`, from its limits and committed columns). */
export class SinkJudges {
  private readonly judges = new Map<Sink, Promise<RecordJudge | undefined>>();

  constructor(private readonly policyOf: (sink: Sink) => UnstorablePolicy = () => 'dead_letter') {}

  /** The sink's judge; undefined when the sink declares no limits. */
  for(sink: Sink): Promise<RecordJudge | undefined> {
    let judge = this.judges.get(sink);
    if (judge === undefined) {
      judge = this.make(sink);
      this.judges.set(sink, judge);
      // A failure to read the columns (a dropped connection) is the unit's; the next unit tries again.
      judge.catch(() => this.judges.delete(sink));
    }
    return judge;
  }

  private async make(sink: Sink): Promise<RecordJudge | undefined> {
    const limits = sink.capabilities.limits;
    if (limits === undefined) return undefined;
    const judge = new RecordJudge(limits, this.policyOf(sink));
    const columns = await sink.currentColumns();
    if (columns) judge.know(columns);
    return judge;
  }
}

export interface StoreGateOptions {
  sink: Pick<Sink, 'describe'>;
  /** The unit's id, for dead letters (the source's, as transforms' letters carry it). */
  unitId: string;
  deadLetter: DeadLetterFn;
  log: Logger;
}

/** Repairs listed in the unit's log line, at most. */
const LISTED = 5;

/** `batches` with every record judged: refused ones dead-lettered, repaired ones replaced by their repair. */
export async function* judged(
  batches: AsyncIterable<Batch>,
  judge: RecordJudge,
  opts: StoreGateOptions,
): AsyncIterable<Batch> {
  const stage = `sink:${opts.sink.describe()}`;
  let index = 0;
  const repaired: string[] = [];
  let repairedRecords = 0;
  for await (const batch of batches) {
    // The batch itself goes on while every record passes as it is (the common case: nothing is copied).
    let out: Batch | undefined;
    for (let i = 0; i < batch.length; i++, index++) {
      const row = batch[i]!;
      const verdict = judge.judge(row);
      if ('row' in verdict && verdict.row === row) {
        out?.push(row);
        continue;
      }
      out ??= batch.slice(0, i);
      if ('refused' in verdict) {
        const letter: DeadLetter & { index: number } = {
          unit: opts.unitId,
          stage,
          reason: `record ${index}: ${verdict.refused}`,
          ...rawText(row),
          index,
        };
        opts.deadLetter(letter);
        continue;
      }
      out.push(verdict.row);
      repairedRecords++;
      for (const r of verdict.repairs ?? []) if (repaired.length < LISTED) repaired.push(`record ${index}: ${r}`);
    }
    const next = out ?? batch;
    if (next.length > 0) yield next;
  }
  if (repairedRecords > 0)
    opts.log.warn(
      `${opts.sink.describe()}: unit ${opts.unitId}: ${repairedRecords} record(s) repaired to fit the store (on_unstorable: repair): ${repaired.join('; ')}${repairedRecords > LISTED ? '; …' : ''}`,
    );
}

/** The record as JSON for its letter (replayed from it); none when it cannot be written as JSON text at all. */
function rawText(row: Row): { raw?: string } {
  try {
    return { raw: JSON.stringify(row, (_k, x: unknown) => (typeof x === 'bigint' ? x.toString() : x)) };
  } catch {
    // Nested deeper than JSON.stringify recurses, or longer than a string can be: the reason says what it was.
    return {};
  }
}
