/**
 * Prepare the table: the target table's columns as this sink last saw them, and the stage that creates or evolves
 * the table so a unit's rows fit, in a transaction of its own holding the table's advisory lock exclusively (other
 * processes may be changing it too). Apart from the unit's load (unit.ts) because it changes the table for every
 * unit after it, not for one.
 */
import type pg from 'pg';
import { declaredTypes } from '../../src/core/declared.js';
import { decidedColumns, type LogicalType } from '../../src/core/logical-type.js';
import type { SchemaChange, SinkContext } from '../../src/core/types.js';
import type { InferredSchema } from '../../src/schema/infer.js';
import { checkKeysPresent } from '../../src/schema/merge-keys.js';
import { ConflictReport, describeChange, evolveColumns } from '../../src/sink-kit/warehouse/evolve.js';
import type { PostgresSinkConfig, TableNames } from './config.js';
import { inTransaction } from './connection.js';
import {
  checkNameLengths,
  columnDdl,
  createTable,
  ensureKeyIndex,
  fitsTable,
  initialColumns,
  lockExclusive,
  lockKey,
  readColumns,
  type Columns,
} from './table.js';
import { qualified } from './types.js';

export class TableColumns {
  /** The target table's columns as last seen; undefined while it does not exist. */
  columns: Columns | undefined;
  // Case conflicts are none here: Postgres names are case-sensitive.
  private readonly conflicts = new ConflictReport((c) => c.kind !== 'case');

  constructor(
    private readonly config: PostgresSinkConfig,
    private readonly names: TableNames,
    private readonly label: string,
  ) {}

  /** Reads the target's columns at open, and makes sure a `merge` table has its key's index. */
  async open(pool: pg.Pool): Promise<void> {
    this.columns = await readColumns(pool, this.names.schema, this.names.target);
    const keys = this.config.primary_key;
    if (!this.columns || !keys) return;
    const { schema, target, table } = this.names;
    await inTransaction(pool, async (c) => {
      await lockExclusive(c, lockKey(schema, table));
      await ensureKeyIndex(c, schema, target, keys);
    });
  }

  fits(incoming: ReadonlyMap<string, LogicalType>): boolean {
    return fitsTable(this.columns, incoming);
  }

  /** The unit's decided columns, checked; its conflicts noted. */
  incoming(ctx: SinkContext, schema: InferredSchema): Map<string, LogicalType> {
    const incoming = decidedColumns(schema.columns);
    checkNameLengths(incoming.keys(), this.label);
    this.note(ctx, schema.conflicts);
    if (schema.rows > 0 && this.config.primary_key) checkKeysPresent(this.config.primary_key, incoming, this.label);
    return incoming;
  }

  /** Creates or evolves the target table so `incoming` fits; returns the changes made. */
  async prepare(pool: pg.Pool, ctx: SinkContext, incoming: ReadonlyMap<string, LogicalType>): Promise<SchemaChange[]> {
    const { schema, target, table } = this.names;
    return inTransaction(pool, async (c) => {
      await lockExclusive(c, lockKey(schema, table));
      // Another process may have created or changed the table since this one last looked.
      const current = await readColumns(c, schema, target);
      if (!current) {
        const columns = initialColumns(ctx.declared && declaredTypes(ctx.declared), incoming);
        checkNameLengths(columns.keys(), this.label);
        await createTable(c, schema, target, columns);
        if (this.config.primary_key) await ensureKeyIndex(c, schema, target, this.config.primary_key);
        this.columns = columns;
        ctx.log.info(`${this.label}: created table ${qualified(schema, target)}`);
        return [];
      }
      const evo = await evolveColumns(qualified(schema, target), current, incoming, this.conflicts.all, columnDdl(c));
      this.columns = evo.columns;
      for (const ch of evo.changes) ctx.log.info(`${this.label}: ${describeChange(ch)}`);
      this.note(ctx);
      return evo.changes;
    });
  }

  /** Logs the conflict list when it grew. */
  private note(ctx: SinkContext, unitConflicts?: InferredSchema['conflicts']): void {
    const grown = this.conflicts.note(unitConflicts);
    if (grown !== undefined) ctx.log.warn(`${this.label}: ${grown}`);
  }
}
