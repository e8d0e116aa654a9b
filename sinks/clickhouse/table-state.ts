/**
 * What the sink knows of its target table between units: its columns as last read (staging tables start from them),
 * the schema conflicts seen so far (logged when the list grows), and the one lock under which this process changes
 * the table and attaches to it — units run at once, and two ALTERs of one table from one process would only queue on
 * the server, while a unit aligning its staging table must see the target hold still until its ATTACH. Other
 * processes (shards) change the table too: every step reads the columns again and tries again when the server says
 * the structure moved (unit.ts).
 */
import { Mutex } from '../../src/core/concurrency.js';
import type { SinkContext } from '../../src/core/types.js';
import type { ConflictLog } from '../../src/schema/conflicts.js';
import { ConflictReport } from '../../src/sink-kit/warehouse/evolve.js';
import type { Server } from './connection.js';
import { readColumns, type ChColumns } from './table.js';

export class TableState {
  // Case conflicts are none here: ClickHouse names are case-sensitive.
  readonly conflicts = new ConflictReport((c) => c.kind !== 'case');
  /** Changes of the target and ATTACHes to it, one at a time in this process. */
  readonly ddl = new Mutex();
  private columns: ChColumns | undefined;
  private known = false;

  constructor(
    private readonly database: string,
    private readonly table: () => string,
  ) {}

  /** The target's columns, read once and then as this process last changed them; undefined: no table yet. */
  async current(server: Server): Promise<ChColumns | undefined> {
    if (!this.known) {
      this.columns = await readColumns(server, this.database, this.table());
      this.known = true;
    }
    return this.columns;
  }

  /** What the target holds now (read by the caller). */
  set(columns: ChColumns | undefined): void {
    this.columns = columns;
    this.known = true;
  }

  /** Read the columns again next time (the table was replaced or dropped). */
  forget(): void {
    this.known = false;
    this.columns = undefined;
  }

  /** Logs the conflict list when it grew. */
  note(ctx: SinkContext, label: string, unitConflicts?: ConflictLog): void {
    const grown = this.conflicts.note(unitConflicts);
    if (grown !== undefined) ctx.log.warn(`${label}: ${grown}`);
  }
}
