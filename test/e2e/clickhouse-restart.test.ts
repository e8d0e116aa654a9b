/**
 * The ClickHouse server restarted (killed: every connection cut, whatever it was doing) at every point of a run, a
 * connection reset mid-insert and a load balancer's 503, through the engine: the run completes by itself, under the
 * one retry policy, with every record exactly once and every unit's state row.
 *
 * The points, each struck once per run (a hook of the source, the sink or the engine strikes while the run waits on
 * it, so where it strikes does not depend on timing):
 * - while the sink opens: the server is down, and started again once the engine says it will open the sink again;
 * - between the plan and the first unit: the run's reads of the committed units meet dead pooled connections;
 * - as the first unit's first batch is read: the staging table is created on a dead pooled connection (DDL);
 * - mid-insert: two batches of a unit sent, the third not yet;
 * - after a unit's intent row, before its ATTACH: the server is down for the ATTACH, and started again once the
 *   engine says it will read the unit again (which must then find the unit not attached, and load it);
 * - after the ATTACH, before the unit's `committed` row: the next attempt must find it attached and load nothing;
 * - after a unit committed: the next unit's state read meets a dead pooled connection;
 * - a connection reset half-way through a unit's insert (a proxy in front of the server cuts it);
 * - a 503 from that proxy instead of the server's answer to an insert.
 *
 * `npm test` runs it once; SLUICE_CH_RESTART=full (CI) 10 times in a row, each on a new database.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Batch, Logger, Source, WorkUnit } from '../../src/core/types.js';
import { runPipeline } from '../../src/operations/run.js';
import { loadPipeline } from '../../src/pipeline/load.js';
import { CH_PASSWORD, CH_USER, startClickHouse, type ClickHouseServer } from '../support/clickhouse-server.js';
import { startHttpFaultProxy, type HttpFaultProxy } from '../support/http-fault-proxy.js';
import { systemBinary } from '../support/system-packages.js';
import { armed } from '../support/failpoints.js';

const RUNS = process.env.SLUICE_CH_RESTART === 'full' ? 10 : 1;
const UNITS = 10;
const BATCHES = 4;
const ROWS = 200;
const available = systemBinary('clickhouse') !== undefined;

let server: ClickHouseServer;
let proxy: HttpFaultProxy;
const dirs: string[] = [];
beforeAll(async () => {
  if (!available) return;
  server = await startClickHouse();
  proxy = await startHttpFaultProxy({ port: server.httpPort });
}, 120_000);
afterAll(async () => {
  await proxy?.close();
  server?.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

type Point = 'open' | 'plan' | 'ddl' | 'insert' | 'before-attach' | 'before-commit' | 'after-commit' | 'reset' | '503';

/** Where each point strikes, and what is done there. Each strikes once. */
class Restarts {
  readonly struck: Point[] = [];
  /** The server was stopped and waits for the engine's retry to start it again. */
  private down = false;
  /**
   * The start `retrying` began. The engine may reach the server before the start has seen it answer, and strike the
   * next point: that point waits for the start to finish instead of killing a server still starting.
   */
  private starting: Promise<void> = Promise.resolve();

  constructor(private readonly server: ClickHouseServer) {}

  once(point: Point): boolean {
    if (this.struck.includes(point)) return false;
    this.struck.push(point);
    return true;
  }

  async restart(point: Point): Promise<void> {
    if (!this.once(point)) return;
    await this.starting;
    await this.server.restart();
  }

  async stop(point: Point): Promise<void> {
    if (!this.once(point)) return;
    await this.starting;
    await this.server.stopServer();
    this.down = true;
  }

  /** The engine said it will try again (a sink open, a unit): the server comes back before it does. */
  retrying(): void {
    if (!this.down) return;
    this.down = false;
    const start = this.server.startServer();
    start.catch(() => undefined); // surfaced by started()
    this.starting = start;
  }

  /** Throws what the last start `retrying` began failed with. */
  async started(): Promise<void> {
    await this.starting;
  }
}

/** Units of `BATCHES` batches of `ROWS` rows, ids unique over the run; `onBatch` runs before each batch is yielded. */
class Units implements Source {
  readonly concurrency = 1;
  readonly incremental = false;
  constructor(private readonly onBatch: (unit: string, batch: number) => Promise<void>) {}

  async plan(): Promise<WorkUnit[]> {
    return Array.from({ length: UNITS }, (_, u) => ({ id: `u${u}`, params: { u } }));
  }

  async *read(unit: WorkUnit): AsyncIterable<Batch> {
    const u = unit.params.u as number;
    for (let b = 0; b < BATCHES; b++) {
      await this.onBatch(unit.id, b);
      yield Array.from({ length: ROWS }, (_, r) => ({
        id: (u * BATCHES + b) * ROWS + r,
        unit: unit.id,
        note: `row ${r} of batch ${b}\twith a tab, and some text to make the insert span several packets`,
      }));
    }
  }
}

async function restartedRun(n: number): Promise<void> {
  const db = `restart_${n}`;
  const r = new Restarts(server);
  // The server stopped after a unit's intent row, before its ATTACH; restarted after the ATTACH, before `committed`.
  armed('clickhouse:after-intent', ({ unit: id }) => (id?.endsWith('/u4') ? r.stop('before-attach') : undefined));
  armed('clickhouse:after-attach', ({ unit: id }) => (id?.endsWith('/u6') ? r.restart('before-commit') : undefined));
  const source = new Units(async (unit, batch) => {
    if (unit === 'u0' && batch === 0) await r.restart('ddl');
    if (unit === 'u2' && batch === 2) await r.restart('insert');
    // The unit's insert is cut once about 20 kB of it went up (a batch is ~25 kB of text).
    if (unit === 'u8' && batch === 0 && r.once('reset'))
      proxy.cutBodyAfter((q) => q.query.startsWith('INSERT'), 40_000);
    if (unit === 'u9' && batch === 0 && r.once('503')) proxy.answerNext((q) => q.query.startsWith('INSERT'), 503);
  });
  const plan = source.plan.bind(source);
  source.plan = async () => {
    await r.restart('plan');
    return plan();
  };
  const dir = mkdtempSync(path.join(tmpdir(), 'sluice-ch-restart-'));
  dirs.push(dir);
  writeFileSync(path.join(dir, 'in.jsonl'), '{}\n');
  const file = path.join(dir, 'p.yaml');
  writeFileSync(
    file,
    [
      'version: 1',
      `name: restart_${n}`,
      // Waits between tries about as long as the server takes to start (0.3–0.5 s): it is back by the second.
      'service: { base_url: emulator, api_key: emulator-key, retry: { retries: 8, base_delay_ms: 150, max_delay_ms: 1500 } }',
      'source: { type: file, paths: [in.jsonl], format: jsonl }',
      `sink: { type: clickhouse, url: '${proxy.url(`${CH_USER}:${CH_PASSWORD}`)}', database: ${db}, table: events }`,
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
  const cut = proxy.dealt.cut;
  const answered = proxy.dealt.answered;
  await r.stop('open');
  const summary = await runPipeline(
    await loadPipeline(file, {}),
    { fresh: false, logFormat: 'text', quiet: true, progress: false },
    {
      source,
      log,
      afterCommit: (u) => (u.id === 'u7' ? r.restart('after-commit') : undefined),
    },
  ).catch((err: unknown) => {
    throw new Error(`run ${n} failed after restarts at ${r.struck.join(', ')}: ${String(err)}\n${lines.join('\n')}`);
  });

  await r.started();
  expect(r.struck.sort()).toEqual(
    ['open', 'plan', 'ddl', 'insert', 'before-attach', 'before-commit', 'after-commit', 'reset', '503'].sort(),
  );
  expect([proxy.dealt.cut - cut, proxy.dealt.answered - answered]).toEqual([1, 1]);
  const total = UNITS * BATCHES * ROWS;
  expect(summary.retries, lines.join('\n')).toBeGreaterThanOrEqual(4);
  const [rows] = await server.rows(
    `SELECT count() AS n, uniqExact(id) AS ids, min(id) AS lo, max(id) AS hi FROM ${db}.events`,
  );
  expect(rows).toEqual({ n: total, ids: total, lo: 0, hi: total - 1 });
  const [state] = await server.rows(
    `SELECT countIf(status = 'committed') AS units, sumIf(records, status = 'committed') AS records
       FROM (SELECT * FROM ${db}._sluice_state ORDER BY version DESC LIMIT 1 BY table_name, unit_id)`,
  );
  expect(state).toEqual({ units: UNITS, records: total });
  // Nothing left beside the table: every staging table of a cut attempt went.
  expect(
    await server.rows(`SELECT name FROM system.tables WHERE database = '${db}' AND name LIKE '%__sluice_%'`),
  ).toEqual([]);
}

describe.skipIf(!available)(
  'the ClickHouse server restarted, a connection reset, a 503, at every point of a run',
  () => {
    it(
      `the run completes with every record exactly once (${RUNS} run(s) in a row)`,
      async () => {
        for (let n = 1; n <= RUNS; n++) await restartedRun(n);
      },
      120_000 * RUNS,
    );
  },
);
