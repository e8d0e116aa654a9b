import { describe, expect, it } from 'vitest';
import type { Batch, DeadLetter, Row, Sink, StoreLimits } from '../../src/core/types.js';
import { judged, SinkJudges } from '../../src/unit/store-gate.js';
import { BIGINT } from '../../src/core/logical-type.js';
import { RecordJudge } from '../../src/schema/storable.js';
import { MemorySink, MemorySource, recordingLogger } from '../support/in-memory.js';
import { attempt, unitPath } from '../support/unit-path.js';

const LIMITS: StoreLimits = {
  store: 'TestDB',
  names: 'all',
  caseInsensitive: true,
  maxNesting: 2,
  maxRecordBytes: 1e6,
};

async function* stream(...bs: Batch[]): AsyncIterable<Batch> {
  for (const b of bs) yield b;
}

async function drain(s: AsyncIterable<Batch>): Promise<Batch[]> {
  const out: Batch[] = [];
  for await (const b of s) out.push(b);
  return out;
}

/** A memory sink whose store has `limits`, and whose committed columns a test gives. */
function limitedSink(name: string, limits: StoreLimits = LIMITS): MemorySink & Pick<Sink, 'currentColumns'> {
  const sink = new MemorySink(name) as MemorySink & Pick<Sink, 'currentColumns'>;
  (sink as { capabilities: Sink['capabilities'] }).capabilities = { limits };
  return sink;
}

describe('store gate', () => {
  it('dead-letters what the store cannot hold, naming the record’s index in the unit; the rest goes on', async () => {
    const letters: DeadLetter[] = [];
    const log = recordingLogger();
    const clean: Batch = [{ id: 1 }, { id: 2 }];
    const out = await drain(
      judged(stream(clean, [{ id: 3 }, { id: 4, '': 1 }, { id: 5, d: [[[1]]] }, { id: 6 }]), new RecordJudge(LIMITS), {
        sink: { describe: () => 'test sink' },
        unitId: 'u1',
        deadLetter: (d) => void letters.push(d),
        log,
      }),
    );
    // A batch where every record passes goes on as it is.
    expect(out[0]).toBe(clean);
    expect(out.flat().map((r) => r.id)).toEqual([1, 2, 3, 6]);
    expect(letters).toEqual([
      {
        unit: 'u1',
        stage: 'sink:test sink',
        reason: 'record 3: an empty key: TestDB names cannot be empty',
        raw: '{"id":4,"":1}',
        index: 3,
      },
      expect.objectContaining({ reason: expect.stringMatching(/^record 4: nested more than 2 levels/), index: 4 }),
    ]);
    expect(log.lines).toEqual([]);
  });

  it('under repair, stores the repaired record and reports it once for the unit', async () => {
    const log = recordingLogger();
    const row: Row = { id: 1, Name: 'a', name: 'b' };
    const out = await drain(
      judged(stream([row]), new RecordJudge(LIMITS, 'repair'), {
        sink: { describe: () => 'test sink' },
        unitId: 'u1',
        deadLetter: () => expect.unreachable(),
        log,
      }),
    );
    expect(Object.keys(out[0]![0]!)).toEqual(['id', 'Name', expect.stringMatching(/^name_[0-9a-f]{8}$/)]);
    expect(log.lines).toEqual([
      expect.stringMatching(
        /^warn: test sink: unit u1: 1 record\(s\) repaired to fit the store \(on_unstorable: repair\): record 0: key "name" renamed to "name_[0-9a-f]{8}" \(key "name" differs only in case from "Name"/,
      ),
    ]);
  });

  it('keeps one judge per sink for the run, knowing the committed columns: units at once share its names', async () => {
    const sink = limitedSink('a');
    let asked = 0;
    sink.currentColumns = async () => {
      asked++;
      return new Map([['Known', BIGINT]]);
    };
    const source = new MemorySource([
      { id: 'u1', rows: [{ Fresh: 1 }] },
      { id: 'u2', rows: [{ fresh: 1 }, { known: 1 }] },
    ]);
    // One path for the run: its units share the sink's judge.
    const { path, letters } = unitPath(source, [sink]);
    const [u1, u2] = await source.plan({} as never);
    await Promise.all([path.load(u1!, u1!, [sink], attempt()), path.load(u2!, u2!, [sink], attempt())]);
    expect(asked).toBe(1);
    expect(letters.map((l: DeadLetter) => `${l.unit} ${l.reason}`)).toEqual([
      'u2 record 0: key "fresh" differs only in case from "Fresh": TestDB names ignore case',
      'u2 record 1: key "known" differs only in case from "Known": TestDB names ignore case',
    ]);
    expect(sink.rows.get('u1')).toEqual([{ Fresh: 1 }]);
    expect(sink.rows.get('u2')).toEqual([]);
  });

  it('asks again after a failure to read the columns: the failure is the unit’s, not the run’s', async () => {
    const sink = limitedSink('a');
    let calls = 0;
    sink.currentColumns = async () => {
      if (++calls === 1) throw new Error('connection reset');
      return undefined;
    };
    const judges = new SinkJudges();
    await expect(judges.for(sink)).rejects.toThrow(/reset/);
    expect(await judges.for(sink)).toBeInstanceOf(RecordJudge);
    // A sink that declares no limits has no judge.
    expect(await judges.for(new MemorySink('free'))).toBeUndefined();
  });
});
