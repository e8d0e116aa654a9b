/**
 * What `open()` finishes before anything else, and `sluice state drop`: a crash (or a lost answer) can stop the
 * sink between any two steps of its protocols, and each step leaves a mark from which the next open goes on.
 *
 * - a `dropping` marker: `sluice state drop` had begun — the tables go, then every state row of the target, the
 *   marker last (so a crash anywhere in between is finished by the next open, and no run sees committed units
 *   whose rows are gone, nor rows whose units are not committed);
 * - units left `publishing`: settled (unit.ts `settle`);
 * - staging tables of units that committed (the crash fell between the commit and the DROP), or of units no run
 *   came back for within a day (a run given up with `--fresh`).
 */
import type { ClickHouseNames } from './config.js';
import { STAGE_SUFFIX } from './config.js';
import type { Server } from './connection.js';
import { unitHash, type StageScope } from './stage.js';
import { latestRows, stateRow, supersedeAll, writeState } from './state.js';
import { literal, qualified } from './types.js';
import { settle } from './unit.js';

/** The unit id of the `dropping` marker (not a unit: no unit id has no `/`). */
const DROP_MARKER = '_sluice_drop';
/** A staging table nobody came back for in this long is a crashed run's that was given up. */
const ABANDONED_MS = 24 * 3600_000;

/** The table a state key's rows describe. */
function tableOf(names: ClickHouseNames, stateKey: string): string {
  return stateKey === names.targetStateKey ? names.target : names.table;
}

export async function recoverAtOpen(s: StageScope): Promise<void> {
  const { server, names, ctx } = s;
  const keys = [...new Set([names.stateKey, names.targetStateKey])];
  const rows = await latestRows(server, names.schema, ctx.pipeline, keys);
  if (rows.some((r) => r.status === 'dropping')) {
    await finishDrop(server, names, ctx.pipeline);
    return;
  }
  for (const r of rows) if (r.status === 'publishing') await settle(s, r, tableOf(names, r.table_name));
  await dropLeftoverStages(server, names, new Set(rows.filter((r) => r.status !== 'publishing').map((r) => r.unit_id)));
}

/** Staging tables of `names`' tables: of finished units (`finished` holds their ids), or abandoned. */
async function dropLeftoverStages(
  server: Server,
  names: ClickHouseNames,
  finished: ReadonlySet<string>,
): Promise<void> {
  const prefixes = [...new Set([names.table, names.target])].map((t) => `${t}${STAGE_SUFFIX}`);
  const tables = await server.rows<{ name: string; age_s: number }>(
    `SELECT name, toUInt32(now() - metadata_modification_time) AS age_s FROM system.tables
      WHERE database = ${literal(names.schema)} AND (${prefixes.map((p) => `startsWith(name, ${literal(p)})`).join(' OR ')})`,
  );
  if (tables.length === 0) return;
  const hashes = new Set([...finished].map((id) => unitHash(id).slice(0, 16)));
  for (const t of tables) {
    const hash = t.name.slice(t.name.lastIndexOf(STAGE_SUFFIX) + STAGE_SUFFIX.length);
    if (hashes.has(hash) || t.age_s * 1000 > ABANDONED_MS)
      await server.exec(`DROP TABLE IF EXISTS ${qualified(names.schema, t.name)}`);
  }
}

/**
 * `sluice state drop`: the table, its next generation and staging tables, with every state row of both — the
 * marker first, so that a crash anywhere is finished by the next `open()`.
 */
export async function dropTableAndState(server: Server, names: ClickHouseNames, pipeline: string): Promise<void> {
  await writeState(server, names.schema, [stateRow(pipeline, names.stateKey, DROP_MARKER, 'dropping')]);
  await finishDrop(server, names, pipeline);
}

async function finishDrop(server: Server, names: ClickHouseNames, pipeline: string): Promise<void> {
  await dropTables(server, names);
  // The marker's own `deleted` row is among them, and all of them are one insert: the drop ends at once.
  await supersedeAll(server, names.schema, pipeline, [...new Set([names.stateKey, names.targetStateKey])]);
}

/** Every table the sink made for `names.table`: the table, the next and old generations, staging tables. */
async function dropTables(server: Server, names: ClickHouseNames): Promise<void> {
  const own = await server.rows<{ name: string }>(
    `SELECT name FROM system.tables WHERE database = ${literal(names.schema)}
        AND (name = ${literal(names.table)} OR startsWith(name, ${literal(`${names.table}__sluice_`)}))`,
  );
  for (const t of own) await server.exec(`DROP TABLE IF EXISTS ${qualified(names.schema, t.name)}`);
}
