/**
 * The Postgres server restarted (`pg_ctl stop -m fast`: every connection gets 57P01 "terminating connection due to
 * administrator command", then is cut) at every point of a run, through the engine: the run completes by itself,
 * with every record exactly once and every unit's state row.
 *
 * The points, each struck once per run (a hook of the source, the sink or the engine restarts the server while the
 * run waits on it, so where it strikes does not depend on timing):
 * - while the sink opens: the server is down, and started again once the engine says it will open the sink again;
 * - between the plan and the first unit: the run's reads of the committed units meet dead pooled connections;
 * - as the first unit's first batch is read: the table is created on a dead pooled connection (DDL);
 * - mid-COPY: two batches of a unit sent, the third not yet;
 * - after a unit's rows went in, before its `_sluice_state` row;
 * - after the state row, just before COMMIT: the server is down for the COMMIT, and started again once the engine
 *   says it will read the unit again (which must then find the unit not committed, and load it);
 * - after a unit committed: the next unit's state read meets a dead pooled connection.
 *
 * `npm test` runs it once; SLUICE_PG_RESTART=full (CI) 20 times in a row, each on a new database.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Batch, Logger, Source, WorkUnit } from '../../src/core/types.js';
import { runPipeline } from '../../src/operations/run.js';
import { loadPipeline } from '../../src/pipeline/load.js';
import { hasPostgres, type PostgresServer, startPostgres } from '../support/postgres-server.js';
import { armed } from '../support/failpoints.js';

const RUNS = process.env.SLUICE_PG_RESTART === 'full' ? 20 : 1;
const UNITS = 10;
const BATCHES = 4;
const ROWS = 50;

let server: PostgresServer;
const dirs: string[] = [];
beforeAll(async () => {
  server = await startPostgres();
}, 120_000);
afterAll(() => {
  server?.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

type Point = 'open' | 'plan' | 'ddl' | 'copy' | 'before-state' | 'before-commit' | 'after-commit';

/** Where each point strikes, and what is done there. Each strikes once. */
class Restarts {
  readonly struck: Point[] = [];
  /** The server was stopped and waits for the engine's retry to start it again. */
  private down = false;

  constructor(private readonly server: PostgresServer) {}

  restart(point: Point): void {
    if (this.struck.includes(point)) return;
    this.struck.push(point);
    this.server.restart();
  }

  stop(point: Point): void {
    if (this.struck.includes(point)) return;
    this.struck.push(point);
    this.server.stopServer();
    this.down = true;
  }

  /** The engine said it will try again (a sink open, a unit): the server comes back before it does. */
  retrying(): void {
    if (!this.down) return;
    this.down = false;
    this.server.startServer();
  }
}

/** Units of `BATCHES` batches of `ROWS` rows, ids unique over the run; `onBatch` runs before each batch is yielded. */
class Units implements Source {
  readonly concurrency = 1;
  readonly incremental = false;
  constructor(private readonly onBatch: (unit: string, batch: number) => void) {}

  async plan(): Promise<WorkUnit[]> {
    return Array.from({ length: UNITS }, (_, u) => ({ id: `u${u}`, params: { u } }));
  }

  async *read(unit: WorkUnit): AsyncIterable<Batch> {
    const u = unit.params.u as number;
    for (let b = 0; b < BATCHES; b++) {
      this.onBatch(unit.id, b);
      yield Array.from({ length: ROWS }, (_, r) => ({
        id: (u * BATCHES + b) * ROWS + r,
        unit: unit.id,
        note: `row ${r} of batch ${b}`,
      }));
    }
  }
}

async function restartedRun(n: number): Promise<void> {
  const db = `restart_${n}`;
  await server.createDatabase(db);
  const r = new Restarts(server);
  // Restarts inside a unit's transaction: before its `_sluice_state` row, and stopped just before its COMMIT.
  armed('postgres:after-data', ({ unit: id }) => void (id?.endsWith('/u4') && r.restart('before-state')));
  armed('postgres:before-commit', ({ unit: id }) => void (id?.endsWith('/u6') && r.stop('before-commit')));
  const source = new Units((unit, batch) => {
    if (unit === 'u0' && batch === 0) r.restart('ddl');
    if (unit === 'u2' && batch === 2) r.restart('copy');
  });
  const plan = source.plan.bind(source);
  source.plan = async () => {
    r.restart('plan');
    return plan();
  };
  const dir = mkdtempSync(path.join(tmpdir(), 'sluice-pg-restart-'));
  dirs.push(dir);
  writeFileSync(path.join(dir, 'in.jsonl'), '{}\n');
  const file = path.join(dir, 'p.yaml');
  writeFileSync(
    file,
    [
      'version: 1',
      `name: restart_${n}`,
      // Short waits between tries: the server is back by the time the engine tries again.
      'service: { base_url: emulator, api_key: emulator-key, retry: { base_delay_ms: 20, max_delay_ms: 200 } }',
      'source: { type: file, paths: [in.jsonl], format: jsonl }',
      `sink: { type: postgres, url: '${server.url(db)}', table: events, write: append }`,
      '',
    ].join('\n'),
  );
  const lines: string[] = [];
  const log: Logger = {
    debug: () => undefined,
    info: (m) => void lines.push(m),
    warn: (m) => {
      lines.push(m);
      if (/opening it again|reading it again/.test(m)) r.retrying();
    },
    error: (m) => void lines.push(m),
  };
  r.stop('open');
  const summary = await runPipeline(
    await loadPipeline(file, {}),
    { fresh: false, logFormat: 'text', quiet: true, progress: false },
    {
      source,
      log,
      afterCommit: (u) => void (u.id === 'u7' && r.restart('after-commit')),
    },
  ).catch((err: unknown) => {
    throw new Error(`run ${n} failed after restarts at ${r.struck.join(', ')}: ${String(err)}\n${lines.join('\n')}`);
  });

  expect(r.struck.sort()).toEqual(
    ['open', 'plan', 'ddl', 'copy', 'before-state', 'before-commit', 'after-commit'].sort(),
  );
  const total = UNITS * BATCHES * ROWS;
  // Records are what was committed; the rows of tries the restarts cut short were read again, counted apart.
  expect(summary.records).toBe(total);
  expect(summary.recordsRead).toBeGreaterThanOrEqual(total + 2 * BATCHES * ROWS);
  expect(summary.retries, lines.join('\n')).toBeGreaterThanOrEqual(3);
  const [rows] = await server.query(
    db,
    'SELECT count(*)::int AS n, count(DISTINCT id)::int AS ids, min(id)::int AS lo, max(id)::int AS hi FROM events',
  );
  expect(rows).toEqual({ n: total, ids: total, lo: 0, hi: total - 1 });
  const [state] = await server.query(
    db,
    'SELECT count(*)::int AS units, sum(records)::int AS records FROM _sluice_state',
  );
  expect(state).toEqual({ units: UNITS, records: total });
}

describe.skipIf(!hasPostgres())('the postgres server restarted at every point of a run', () => {
  it(
    `the run completes with every record exactly once (${RUNS} run(s) in a row)`,
    async () => {
      for (let n = 1; n <= RUNS; n++) await restartedRun(n);
    },
    120_000 * RUNS,
  );
});
