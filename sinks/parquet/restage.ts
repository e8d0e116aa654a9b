/**
 * Units an earlier sluice staged without judging their records (before 2026-11-26): one record a publish cannot
 * write — a partition value too long for a directory name, a 40 MB text, names that differ only in case — made
 * every publish of the output fail, and every later run with it, while new units piled up staged. When the output
 * opens, each such unit's staged file is read again, in commit order, and judged as the engine judges records now
 * (schema/storable.ts): the records the store cannot hold go to the dead letters (the reason says the record's
 * index in the staged file) and the unit is staged again without them, in one manifest swap; a unit that holds none
 * just has its longest line recorded. Its other records stay committed, exactly once.
 */
import { createReadStream } from 'node:fs';
import path from 'node:path';
import type { Batch, DeadLetter, DeadLetterFn, Logger, Row } from '../../src/core/types.js';
import { InferredSchema } from '../../src/schema/infer.js';
import type { RecordJudge } from '../../src/schema/storable.js';
import { serializeColumns } from '../../src/sink-kit/output-files/dataset-schema.js';
import type { ManifestUnit } from '../../src/sink-kit/output-files/manifest.js';
import { LONG_LINE, writeNdjson } from '../../src/sink-kit/output-files/ndjson-writer.js';
import type { OutputDir } from '../../src/sink-kit/output-files/output-dir.js';
import { JsonlLines } from '../../src/sink-kit/raw-jsonl/lines.js';

export interface RestageOptions {
  judge: RecordJudge;
  deadLetter: DeadLetterFn;
  log: Logger;
  /** The dead letters' stage: `sink:<describe()>`. */
  stage: string;
  label: string;
}

type Staged = NonNullable<ManifestUnit['staged']>;

/**
 * Units staged by the native path (their raw lines as they came) written again from their rows: each line parsed and
 * written out as JSON, as the rows path writes it. Done when a publish found text in them DuckDB's reader refuses
 * where JSON.parse does not (a key twice in an object: the last value, as the JS path keeps it); one manifest swap
 * points the units at their new files and removes the old ones. The records, their order and the unit's columns do
 * not change.
 */
export async function restageRaw(out: OutputDir, ids: readonly string[], log: Logger, label: string): Promise<void> {
  const changed = new Map<string, Staged>();
  for (const id of ids) {
    const staged = out.manifest.units[id]?.staged;
    if (!staged?.raw) continue;
    const file = await out.stagedFile(staged.file);
    const name = `${path.basename(staged.file).replace(/\.staged$/, '')}-rows.staged`;
    const schema = new InferredSchema({ temporalText: true });
    const written = await writeNdjson(
      (async function* () {
        let batch: Batch = [];
        for await (const { row } of stagedRows(file)) {
          batch.push(row);
          if (batch.length >= 1000) {
            yield batch;
            batch = [];
          }
        }
        if (batch.length > 0) yield batch;
      })(),
      path.join(out.stagedDir, name),
      { schema, sync: true },
    );
    changed.set(id, {
      file: `${out.stagedRel}/${name}`,
      bytes: written.bytes,
      schema: staged.schema,
      longest: written.longestLine,
    });
  }
  if (changed.size === 0) return;
  await out.commit({
    moves: [],
    apply: (m) => {
      for (const [id, staged] of changed) {
        const unit = m.units[id];
        if (unit?.staged) unit.staged = staged;
      }
    },
  });
  log.warn(
    `${label}: DuckDB's reader refused the text of ${changed.size} unit(s) staged as they came (a key twice in an object): staged them again from their rows`,
  );
}

/** Judges and, where needed, restages every unit staged without a judge. */
export async function restageUnjudged(out: OutputDir, o: RestageOptions): Promise<void> {
  const legacy = Object.entries(out.manifest.units).filter(([, u]) => u.staged && u.staged.longest === undefined);
  if (legacy.length === 0) return;
  const changed = new Map<string, { staged?: Staged; records: number }>();
  let refused = 0;
  for (const [id, u] of legacy) {
    const staged = u.staged!;
    const file = await out.stagedFile(staged.file);
    const kept: Batch = [];
    let index = 0;
    let longest = LONG_LINE;
    let dropped = 0;
    let repaired = false;
    for await (const { row, bytes } of stagedRows(file)) {
      longest = Math.max(longest, bytes);
      const verdict = o.judge.judge(row);
      if ('refused' in verdict) {
        const letter: DeadLetter & { index: number } = {
          unit: id,
          stage: o.stage,
          reason: `record ${index} (staged by an earlier sluice): ${verdict.refused}`,
          raw: JSON.stringify(row),
          index,
        };
        o.deadLetter(letter);
        dropped++;
      } else {
        kept.push(verdict.row);
        repaired ||= verdict.row !== row;
      }
      index++;
    }
    refused += dropped;
    if (dropped === 0 && !repaired) {
      changed.set(id, { staged: { ...staged, longest }, records: u.records });
      continue;
    }
    if (kept.length === 0) {
      changed.set(id, { records: 0 });
      continue;
    }
    const name = `${path.basename(staged.file).replace(/\.staged$/, '')}-judged.staged`;
    const schema = new InferredSchema({ temporalText: true });
    const written = await writeNdjson(
      (async function* () {
        yield kept;
      })(),
      path.join(out.stagedDir, name),
      { schema, sync: true },
    );
    changed.set(id, {
      staged: {
        file: `${out.stagedRel}/${name}`,
        bytes: written.bytes,
        schema: serializeColumns(schema.columns),
        longest: written.longestLine,
      },
      records: written.rows,
    });
  }
  await out.commit({
    moves: [],
    apply: (m) => {
      for (const [id, c] of changed) {
        const unit = m.units[id];
        if (!unit) continue;
        unit.records = c.records;
        if (c.staged === undefined) delete unit.staged;
        else unit.staged = c.staged;
      }
    },
  });
  o.log.warn(
    `${o.label}: judged ${legacy.length} unit(s) an earlier sluice staged without judging their records: ${refused} record(s) it cannot publish went to the dead letters`,
  );
}

/**
 * The rows of a staged NDJSON file (written by sluice: one JSON object per line), with each line's bytes. Lines are
 * split by raw-jsonl/lines.ts, in linear time however long one is; none is refused for its length: what an earlier
 * sluice staged is judged by the store's limits (the judge), not by the decoders'.
 */
async function* stagedRows(file: string): AsyncIterable<{ row: Row; bytes: number }> {
  let rows: { row: Row; bytes: number }[] = [];
  const lines = new JsonlLines(Infinity, (buf, start, end) => {
    if (end > start) rows.push({ row: JSON.parse(buf.toString('utf8', start, end)) as Row, bytes: end - start });
  });
  for await (const chunk of createReadStream(file, { highWaterMark: 1 << 20 }) as AsyncIterable<Buffer>) {
    lines.push(chunk);
    yield* rows;
    rows = [];
  }
  lines.end();
  yield* rows;
}
