/**
 * Units of the native path committed together: one transaction holds the rows and `_sluice_state` rows of several
 * units, each unit's file inserted as soon as it is staged, and commits as soon as its rows leave row groups the
 * next checkpoint keeps (`keepsRowGroups`), or when no unit is on its way to it — at the latest when `GROUP_UNITS`
 * units wait, for the engine reads no further ahead. Every unit is still committed exactly once and atomically with
 * its checkpoint — the transaction commits all of them or none — and none is reported committed before it is.
 *
 * Why: a transaction smaller than a row group goes through DuckDB's write-ahead log — each row serialized into the
 * log, held uncompressed in memory (spilled beyond the memory limit), and compressed only by the next checkpoint,
 * which stalls every load. A transaction of a row group or more is compressed as it is inserted and written into the
 * database file directly, the log keeping only where, and so is its last, partial row group when it commits. Over
 * 200k company profiles in units of 10k, the database's work (one thread, the critical path of the load) measured
 * 3.9–4.1 CPU-s in groups against 5.2 one unit at a time.
 *
 * The engine lets the next units be read while a group gathers (the scheduler's `committing` places, which this
 * sink asks for): a unit tells it its reading is over once its file is staged. A unit whose file DuckDB's reader
 * refuses aborts the transaction; that unit is refused (`NativeLoadRefused`: the engine decodes it in JS) and the
 * others go into the next transaction. A unit whose columns do not fit the table as it is ends the group before it:
 * the table is prepared between transactions (schema changes never run beside this transaction's appends).
 */
import type { DuckDBConnection } from '@duckdb/node-api';
import { NativeLoadRefused } from '../../src/core/errors.js';
import { atFailpoint } from '../../src/core/failpoints.js';
import type { LogicalType } from '../../src/core/logical-type.js';
import type { CommitResult, SchemaChange, UnitCommit, WorkUnit } from '../../src/core/types.js';
import { nullRowsDropped, withChanges } from '../../src/sink-kit/warehouse/unit-result.js';
import { commitStaged, unitFailure, type CommitScope } from './commit.js';
import { insertRows } from './load.js';
import { readJsonRefusal } from './read.js';
import type { StagedUnit } from './stage.js';
import { insertStateRow, isUnitCommitted } from './state.js';
import { fitTextToTemporal } from './temporal-text.js';
import { CHECKPOINT_THRESHOLD } from './database.js';
import { rollback } from './transaction.js';

/** Rows in one of DuckDB's row groups: a transaction of at least this many is written to the file as it goes. */
export const ROW_GROUP_ROWS = 122_880;
/**
 * Whether a transaction appending `rows` leaves row groups that DuckDB's checkpoint keeps as they are. A transaction
 * of a row group or more is merged into the table as row groups of its own, its last one partial, and a checkpoint
 * rewrites every run of up to four adjacent row groups that fits into one fewer (its vacuum). Two small partial row
 * groups around one or two full ones are such a run: over 1M company profiles in units of 10k, transactions of 26
 * units (260k rows, partial row groups of 14,240) made DuckDB's last checkpoint take 6.7 s and its whole load
 * 22.0 s, of 24 units (240k, 117,120) 0.5 s and 15.7 s; 13 units 14.8 s, 19 units 0.6 s (DuckDB alone, one thread).
 * A partial row group of at least half a row group never fits beside another such. A group ends at the first such
 * size: through the sink, 1M records loaded in 33.2–33.7 s in groups of 26, 25.5–25.8 s with a group ending before
 * a unit that would break the rule, 23.7–24.2 s ending at the first size that keeps it (19 units; the engine stages
 * the next group's units while one commits); 200k the same (one group of 200k before, 19 + 1 now).
 */
export function keepsRowGroups(rows: number): boolean {
  return rows >= ROW_GROUP_ROWS && rows % ROW_GROUP_ROWS >= ROW_GROUP_ROWS / 2;
}

/**
 * Units staged and not yet committed at once (the scheduler's `committing` places): a group of 10k-record parts
 * (19, `keepsRowGroups`) and the first units of the next, staged while the group's last inserts and commit run; each
 * holds its staged file on disk until it commits. Groups of smaller units end here at the latest.
 */
export const GROUP_UNITS = 24;

interface Waiting {
  unit: WorkUnit;
  staged: StagedUnit;
  commit: UnitCommit;
  /** Schema changes made for this unit before its group (reported with its commit). */
  changes: SchemaChange[];
  resolve(r: CommitResult): void;
  reject(err: unknown): void;
}

export class UnitGroups {
  private readonly queue: Waiting[] = [];
  /** Units of this sink whose files are being read: a group waits for them before it commits without them. */
  private reading = 0;
  private draining: Promise<void> | undefined;
  private arrived: (() => void) | undefined;
  /**
   * A group ran out of the database's memory limit: for the rest of the sink's life, units commit one at a time
   * (commit.ts), as they did before groups. A row group being written out takes more memory than a unit's load
   * (records of 34 columns: 128MB held it, 96MB did not).
   */
  private alone = false;

  constructor(private readonly scope: () => CommitScope) {}

  /** A unit's file is being read for this sink; the function returned says it is not coming after all. */
  readingOne(): () => void {
    this.reading++;
    let gone = false;
    return () => {
      if (gone) return;
      gone = true;
      this.reading--;
      this.wake();
    };
  }

  /** Commits the staged unit with a group; resolves once that group's transaction committed. */
  commit(unit: WorkUnit, staged: StagedUnit, commit: UnitCommit): Promise<CommitResult> {
    return new Promise<CommitResult>((resolve, reject) => {
      const s = this.scope();
      try {
        staged = s.table.withDeclared(s.session.ctx, staged);
        s.table.checkUnit(s.session.ctx, staged.schema.conflicts);
      } catch (err) {
        reject(err);
        return;
      }
      this.queue.push({ unit, staged, commit, changes: [], resolve, reject });
      this.wake();
      this.draining ??= this.drain().finally(() => {
        this.draining = undefined;
      });
    });
  }

  private wake(): void {
    const arrived = this.arrived;
    this.arrived = undefined;
    arrived?.();
  }

  /** Groups until the queue is empty. */
  private async drain(): Promise<void> {
    while (this.queue.length > 0) {
      const s = this.scope();
      const head = this.queue[0]!;
      if (this.alone) {
        this.queue.shift();
        await commitStaged(s, head.unit, head.staged, head.commit).then(
          (r) => head.resolve(head.changes.length > 0 ? withChanges(r, head.changes) : r),
          head.reject,
        );
        continue;
      }
      try {
        const incoming = await this.fitted(head);
        if (incoming.size > 0 && !s.table.fits(incoming)) {
          head.changes.push(...(await s.session.locked(() => s.table.prepare(s.session, incoming))));
          continue;
        }
      } catch (err) {
        this.queue.shift();
        head.reject(unitFailure(s.label, `could not load unit ${head.unit.id}`, err));
        continue;
      }
      await s.session.db.withLoadSlot(() =>
        s.session.appending(() => s.session.withUnitConnection((conn) => this.group(s, conn))),
      );
    }
  }

  /** The unit's columns decided against the table as it is now (temporal-text.ts). */
  private fitted(w: Waiting): Promise<ReadonlyMap<string, LogicalType>> {
    const s = this.scope();
    return s.session.read((conn) => fitTextToTemporal(conn, w.staged, s.table.columns));
  }

  /**
   * One transaction: units from the queue while they fit the table, until its rows leave row groups the checkpoint
   * keeps or none is coming.
   */
  private async group(s: CommitScope, conn: DuckDBConnection): Promise<void> {
    const members: { w: Waiting; records: number }[] = [];
    let rows = 0;
    let current: Waiting | undefined;
    const { pipeline } = s.session.ctx;
    await conn.run('BEGIN TRANSACTION');
    try {
      for (;;) {
        const w = this.queue[0];
        if (w === undefined) {
          // More units are on their way: the transaction waits for them (the engine reads no more than
          // GROUP_UNITS ahead, so a group ends there at the latest).
          if (this.reading > 0) {
            await new Promise<void>((r) => (this.arrived = r));
            continue;
          }
          break;
        }
        const incoming = await this.fitted(w);
        // Columns that need the table changed: the change is made between transactions.
        if (incoming.size > 0 && !s.table.fits(incoming)) break;
        this.queue.shift();
        current = w;
        // Checked inside the transaction: the sink's look before staging may be stale.
        if (await isUnitCommitted(conn, pipeline, s.names.targetStateKey, w.unit.id)) {
          w.resolve({ committed: false, records: 0 });
          current = undefined;
          continue;
        }
        let records: number;
        try {
          records = await insertRows(conn, {
            pipeline,
            names: s.names,
            unitId: w.unit.id,
            commit: w.commit,
            unit: { ...w.staged, columns: incoming },
            table: s.table.columns && new Map(s.table.columns),
            onNullRowsDropped: (n) => s.session.ctx.log.warn(nullRowsDropped(s.label, n)),
          });
        } catch (err) {
          const text = readJsonRefusal(err);
          if (text === undefined) throw err;
          // The transaction is aborted: this unit is refused, the others are inserted again in the next one.
          await rollback(conn);
          this.queue.unshift(...members.map((m) => m.w));
          current = undefined;
          w.reject(new NativeLoadRefused('duckdb sink', text, err));
          return;
        }
        await atFailpoint('duckdb:after-data', w.unit.id);
        await insertStateRow(conn, pipeline, s.names.targetStateKey, w.unit.id, records, w.commit.checkpoint());
        members.push({ w, records });
        current = undefined;
        rows += records;
        // Larger gains nothing, and ending here lets the engine stage the next group's units while this one commits.
        if (keepsRowGroups(rows)) break;
      }
      if (members.length === 0) {
        await rollback(conn);
        return;
      }
      await this.commitGroup(conn, rows);
    } catch (err) {
      await rollback(conn);
      const units = [...members.map((m) => m.w), ...(current ? [current] : [])];
      if (outOfMemory(err)) {
        this.alone = true;
        this.queue.unshift(...units);
        s.session.ctx.log.warn(
          `${s.label}: ${units.length} unit(s) in one transaction ran out of memory_limit ${s.config.memory_limit}; ` +
            'committing units one at a time from now on (raise memory_limit for the faster load)',
        );
        return;
      }
      for (const w of units) w.reject(unitFailure(s.label, `could not load unit ${w.unit.id}`, err));
      return;
    }
    for (const { w, records } of members) {
      const r: CommitResult = { committed: true, records };
      s.load.committed(r);
      w.resolve(withChanges(r, [...s.table.openChanges.splice(0), ...w.changes]));
    }
  }

  /**
   * COMMIT. A group of fewer rows than a row group that ends because no unit is on its way (the run's last) is
   * committed by a checkpoint instead of through the log: its rows would otherwise be written to the log and then
   * compressed by the checkpoint at the end anyway (DuckDB skips the log for a commit that checkpoints at once:
   * measured 1.9 → 1.45 s for 60k company profiles). Mid-run, small groups go through the log: a checkpoint per
   * group would compress the table's last row group again each time.
   */
  private async commitGroup(conn: DuckDBConnection, rows: number): Promise<void> {
    const last = rows < ROW_GROUP_ROWS && this.queue.length === 0 && this.reading === 0;
    if (!last) {
      await conn.run('COMMIT');
      return;
    }
    await conn.run(`SET checkpoint_threshold = '1KB'`);
    try {
      await conn.run('COMMIT');
    } finally {
      await conn.run(`SET checkpoint_threshold = '${CHECKPOINT_THRESHOLD}'`);
    }
  }
}

/** DuckDB's refusal to allocate within its memory limit, behind whatever wrapped it. */
function outOfMemory(err: unknown): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++)
    if (/Out of Memory Error/.test(e.message)) return true;
  return false;
}
