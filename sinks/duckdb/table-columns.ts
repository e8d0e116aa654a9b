/**
 * Prepare the table: the target table's columns as this sink last saw them, and the stage that creates or evolves
 * the table so a unit's rows fit (under the table lock), declared columns included. Apart from the unit's commit
 * (commit.ts) because it changes the table for every unit after it, not for one.
 */
import { SluiceError } from '../../src/core/errors.js';
import type { LogicalType } from '../../src/core/logical-type.js';
import type { SchemaChange, SinkContext } from '../../src/core/types.js';
import type { ConflictLog } from '../../src/schema/conflicts.js';
import { ConflictReport, describeChange, evolveColumns } from '../../src/sink-kit/warehouse/evolve.js';
import type { TableNames } from './config.js';
import type { DuckDBSession } from './session.js';
import type { StagedUnit } from './stage.js';
import { columnDdl, createTable, fitsTable, qualified, readColumns, type Columns } from './table.js';

export class TableColumns {
  /** The target table's columns; undefined while it does not exist. */
  columns: Columns | undefined;
  /** Changes `open()` made for the declared columns: reported with the first commit. */
  readonly openChanges: SchemaChange[] = [];
  private readonly conflicts = new ConflictReport();

  constructor(
    private readonly names: TableNames,
    private readonly label: string,
  ) {}

  /** Reads the target's columns (under the table lock at open). */
  async read(session: DuckDBSession): Promise<void> {
    this.columns = await readColumns(session.conn, this.names.schema, this.names.target);
  }

  fits(incoming: ReadonlyMap<string, LogicalType>): boolean {
    return fitsTable(this.columns, incoming);
  }

  /**
   * Creates or evolves the target table so `incoming` fits; returns the changes made to an existing table (a new
   * table is no change: nothing existed). Called under the table lock.
   */
  async prepare(session: DuckDBSession, incoming: ReadonlyMap<string, LogicalType>): Promise<SchemaChange[]> {
    const log = session.ctx.log;
    const { schema, target } = this.names;
    if (!this.columns) {
      this.columns = await createTable(session.conn, schema, target, incoming);
      log.info(`${this.label}: created table ${qualified(schema, target)}`);
      return [];
    }
    if (fitsTable(this.columns, incoming)) return [];
    const q = qualified(schema, target);
    const evo = await evolveColumns(q, this.columns, incoming, this.conflicts.all, columnDdl(session.conn));
    this.columns = evo.columns;
    for (const c of evo.changes) log.info(`${this.label}: ${describeChange(c)}`);
    this.note(session.ctx);
    return evo.changes;
  }

  /** Declared columns (called under the table lock at open): the table gets every one, with its declared type. */
  async declare(session: DuckDBSession, declared: ReadonlyMap<string, LogicalType>): Promise<void> {
    if (this.columns && fitsTable(this.columns, declared)) return;
    this.openChanges.push(...(await this.prepare(session, declared)));
  }

  /**
   * A declared column the unit's rows never typed (only nulls, `[]` or `{}`) is read with its declared type all the
   * same: an empty list stays `[]`, as the row had it, instead of becoming NULL for want of a type.
   */
  withDeclared(ctx: SinkContext, staged: StagedUnit): StagedUnit {
    const declared = ctx.declared;
    if (!declared || declared.every((c) => staged.columns.has(c.name))) return staged;
    const columns = new Map(staged.columns);
    for (const c of declared) if (!columns.has(c.name)) columns.set(c.name, c.type);
    return { ...staged, columns };
  }

  /** DuckDB cannot hold two names that differ only in case: says which, before anything is written. */
  checkUnit(ctx: SinkContext, unitConflicts: ConflictLog): void {
    const cases = unitConflicts.caseConflicts();
    if (cases.length > 0)
      throw new SluiceError(
        `${this.label}: field names that differ only in case: ${cases.map((c) => `${c.path} (${c.seen.join(' / ')})`).join(', ')}`,
        {
          hint: 'DuckDB names ignore case: rename one of each pair with the `rename` transform, or drop it with `select`',
        },
      );
    this.note(ctx, unitConflicts);
  }

  /** Logs the conflict list when it grew. */
  private note(ctx: SinkContext, unitConflicts?: ConflictLog): void {
    const grown = this.conflicts.note(unitConflicts);
    if (grown !== undefined) ctx.log.warn(`${this.label}: ${grown}`);
  }
}
