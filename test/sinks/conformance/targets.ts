/**
 * The one table of the sink conformance suite: for every sink the registry lists (sinks/index.ts), the targets it is
 * proved on — where its output lives (a local file or directory, a table on a PostgreSQL server, a prefix on an S3
 * server), the config a pipeline gives it, how a reader reads its rows back, how its committed checkpoints are read
 * back from the store itself (not through the sink), and the failpoints of its commit path.
 *
 * A sink is in the suite by being in the registry: registry.test.ts fails when a registered type has no target here
 * (or a file sink that writes to S3 has no S3 target). Every scenario iterates over TARGETS: every target of the
 * table (ALL_TARGETS) whose server this machine has (ClickHouse comes from a system package: without it its target
 * is skipped, as test/support/system-packages.ts says at the top of the run), narrowed by
 * `SLUICE_CONFORMANCE_TARGETS=clickhouse,postgres` (target names, comma-separated) when developing one sink.
 */
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll } from 'vitest';
import type { FailpointName } from '../../../src/core/failpoints.js';
import { canonical } from '../../support/compare-tables.js';
import { startClickHouse, type ClickHouseServer } from '../../support/clickhouse-server.js';
import { hasPostgres, startPostgres, type PostgresServer } from '../../support/postgres-server.js';
import { startS3Server, type S3TestServer } from '../../support/s3-server.js';
import { systemBinary } from '../../support/system-packages.js';
import { duckRows, type Obj } from './read.js';

export type Server = 'postgres' | 's3' | 'clickhouse';

/** The servers a file's targets need, started once for the file. */
export interface Servers {
  postgres?: PostgresServer;
  s3?: S3TestServer;
  clickhouse?: ClickHouseServer;
}

/** One output of one pipeline: where its files go, its name (a table, a directory), the servers. */
export interface Output {
  /** The pipeline file's directory: relative sink paths resolve against it. */
  dir: string;
  /** Unique within the suite's run: a table name or a directory name. */
  name: string;
  servers: Servers;
}

export type WriteMode = 'append' | 'merge' | 'replace';

/** What a scenario asks of the sink, beside where it writes. */
export interface SinkOptions {
  /**
   * File sinks: publish each unit as soon as it is committed (a one-byte target file size), so that what a unit
   * committed is what a reader sees even when the run then fails (a failed run publishes nothing at its end), and
   * a kill can fall between the steps of any publish. Other sinks: no effect (their commit is what readers see).
   */
  publishEachUnit?: boolean;
  write?: WriteMode;
  primary_key?: string[];
  lineage?: boolean;
  schema_contract?: string | Record<string, string>;
}

/** A failpoint of the sink's commit path and the hit that strikes it mid-run (see src/core/failpoints.ts). */
export type CommitFailpoint = FailpointName | `${FailpointName}=${number}`;

export interface Target {
  /** `duckdb`, `postgres`, `jsonl`, `jsonl-s3`, … */
  name: string;
  /** The registry's type. */
  type: string;
  /** Where the output lives. */
  storage: 'local' | Server;
  needs: readonly Server[];
  /** The sink's entry in a pipeline's `sinks:`. */
  sink(o: Output, opts?: SinkOptions): Record<string, unknown>;
  /** The rows a reader sees (the table; every data file a listing finds, the live generation for `replace`). */
  rows(o: Output): Promise<Obj[]>;
  /** The checkpoints committed with the pipeline's units, by sink unit id, read from the store itself. */
  checkpoints(o: Output, pipeline: string): Promise<Map<string, unknown>>;
  /**
   * The failpoints on the sink's own commit path, by write mode: the crash scenario kills a run at each (the full
   * matrix) or at the first (npm test).
   */
  failpoints: Record<'append' | 'replace', CommitFailpoint[]>;
  /** What a crash leaves that a successful run must have cleared: temp and staging files, spare generations. */
  leftovers(o: Output): Promise<string[]>;
  /**
   * Transactional stores: the records of the units committed (their state rows), which the table must hold exactly
   * at any moment, a kill -9 included.
   */
  committedRecords?(o: Output, pipeline: string): Promise<number>;
}

const BUCKET = 'conformance';

const duckdb: Target = {
  name: 'duckdb',
  type: 'duckdb',
  storage: 'local',
  needs: [],
  sink: (o, { publishEachUnit: _, ...opts } = {}) => ({
    type: 'duckdb',
    path: `out/${o.name}.duckdb`,
    table: o.name,
    ...opts,
  }),
  rows: (o) => duckRows(path.join(o.dir, 'out', `${o.name}.duckdb`), `SELECT * FROM w.main."${o.name}"`),
  async checkpoints(o, pipeline) {
    const rows = await duckRows(
      path.join(o.dir, 'out', `${o.name}.duckdb`),
      `SELECT unit_id, CAST(checkpoint AS VARCHAR) AS checkpoint FROM w.main._sluice_state WHERE pipeline = '${pipeline}' AND table_name = '${o.name}'`,
    );
    return new Map(rows.filter((r) => r.checkpoint !== null).map((r) => [r.unit_id, JSON.parse(r.checkpoint)]));
  },
  failpoints: { append: ['duckdb:after-data=2'], replace: ['duckdb:replace-swap', 'duckdb:after-data=2'] },
  leftovers: async (o) => filesUnder(path.join(o.dir, 'out', `${o.name}.duckdb.sluice-tmp`)),
  async committedRecords(o, pipeline) {
    const rows = await duckRows(
      path.join(o.dir, 'out', `${o.name}.duckdb`),
      `SELECT coalesce(sum(records), 0)::BIGINT AS n FROM w.main._sluice_state WHERE pipeline = '${pipeline}' AND table_name = '${o.name}'`,
    );
    return Number(rows[0]?.n ?? 0);
  },
};

const postgres: Target = {
  name: 'postgres',
  type: 'postgres',
  storage: 'postgres',
  needs: ['postgres'],
  sink: (o, { publishEachUnit: _, ...opts } = {}) => ({
    type: 'postgres',
    // Without the server (a config only looked at, not run): libpq's environment would say where.
    ...(o.servers.postgres && { url: o.servers.postgres.socketUrl(DATABASE) }),
    table: o.name,
    ...opts,
  }),
  async rows(o) {
    const exists = await pg(o).query(DATABASE, `SELECT to_regclass('public."${o.name}"') IS NOT NULL AS e`);
    if (!exists[0]!.e) return [];
    return (await pg(o).query(DATABASE, `SELECT to_jsonb(t) AS j FROM public."${o.name}" t`)).map(
      (r) => canonical(r.j) as Obj,
    );
  },
  async checkpoints(o, pipeline) {
    const exists = await pg(o).query(DATABASE, `SELECT to_regclass('public._sluice_state') IS NOT NULL AS e`);
    if (!exists[0]!.e) return new Map();
    // The column itself: NULL here is what issue 21 found (the sink copied the checkpoint before it was final).
    const rows = await pg(o).query(
      DATABASE,
      'SELECT unit_id, checkpoint FROM public._sluice_state WHERE pipeline = $1 AND table_name = $2 AND checkpoint IS NOT NULL',
      [pipeline, `public.${o.name}`],
    );
    return new Map(rows.map((r) => [r.unit_id as string, r.checkpoint]));
  },
  failpoints: {
    append: ['postgres:mid-copy=2000', 'postgres:after-data=2', 'postgres:before-commit=3'],
    replace: ['postgres:after-data=2'],
  },
  async leftovers(o) {
    const r = await pg(o).query(DATABASE, `SELECT to_regclass('public."${o.name}__sluice_next"') IS NOT NULL AS e`);
    return r[0]!.e ? [`${o.name}__sluice_next`] : [];
  },
  async committedRecords(o, pipeline) {
    const exists = await pg(o).query(DATABASE, `SELECT to_regclass('public._sluice_state') IS NOT NULL AS e`);
    if (!exists[0]!.e) return 0;
    const r = await pg(o).query(
      DATABASE,
      'SELECT coalesce(sum(records), 0)::int AS n FROM public._sluice_state WHERE pipeline = $1 AND table_name = $2',
      [pipeline, `public.${o.name}`],
    );
    return r[0]!.n as number;
  },
};

/**
 * ClickHouse: tables in one database of the file's server, read as a reader reads them (`FINAL` for a `merge`
 * table, a ReplacingMergeTree). Its `committedRecords` are the records of the units whose rows the state says are
 * published: `committed`, or `publishing` with their load attached (the step between the ATTACH and the unit's
 * `committed` row, which the next open settles; sinks/clickhouse/unit.ts) — the table must hold exactly those.
 */
const clickhouse: Target = {
  name: 'clickhouse',
  type: 'clickhouse',
  storage: 'clickhouse',
  needs: ['clickhouse'],
  sink: (o, { publishEachUnit: _, ...opts } = {}) => ({
    type: 'clickhouse',
    // Without the server (a config only looked at, not run): where a local server would be.
    url: o.servers.clickhouse?.url() ?? 'http://127.0.0.1:8123',
    database: CH_DATABASE,
    table: o.name,
    ...opts,
  }),
  async rows(o) {
    const engine = await ch(o).rows<{ engine: string }>(
      `SELECT engine FROM system.tables WHERE database = '${CH_DATABASE}' AND name = '${o.name}'`,
    );
    if (engine.length === 0) return [];
    const final = engine[0]!.engine.startsWith('Replacing') ? ' FINAL' : '';
    return (await ch(o).rows<Obj>(`SELECT * FROM ${CH_DATABASE}.\`${o.name}\`${final}`)).map(
      (r) => canonical(r) as Obj,
    );
  },
  async checkpoints(o, pipeline) {
    const rows = await chState(o, pipeline);
    return new Map(
      rows
        .filter((r) => r.status === 'committed' && r.checkpoint !== '')
        .map((r) => [r.unit_id, JSON.parse(r.checkpoint)]),
    );
  },
  failpoints: {
    append: ['clickhouse:after-attach=2', 'clickhouse:after-intent=2', 'clickhouse:mid-insert=2000'],
    replace: ['clickhouse:replace-swap', 'clickhouse:after-swap', 'clickhouse:after-attach=2'],
  },
  async leftovers(o) {
    const tables = await ch(o).rows<{ name: string }>(
      `SELECT name FROM system.tables WHERE database = '${CH_DATABASE}' AND startsWith(name, '${o.name}__sluice_')`,
    );
    return tables.map((t) => t.name);
  },
  async committedRecords(o, pipeline) {
    let n = 0;
    for (const r of await chState(o, pipeline)) {
      if (r.status === 'committed') n += r.records;
      else if (r.status === 'publishing') {
        const attached = await ch(o).rows(
          `SELECT 1 FROM ${CH_DATABASE}.\`${o.name}\` WHERE _sluice_load = '${r.load_id}' LIMIT 1`,
        );
        if (attached.length > 0) n += r.records;
      }
    }
    return n;
  },
};

/** The newest state row of each unit of the output's table (sinks/clickhouse/state.ts), read from the store. */
async function chState(
  o: Output,
  pipeline: string,
): Promise<{ unit_id: string; status: string; load_id: string; records: number; checkpoint: string }[]> {
  const exists = await ch(o).rows(
    `SELECT 1 FROM system.tables WHERE database = '${CH_DATABASE}' AND name = '_sluice_state'`,
  );
  if (exists.length === 0) return [];
  return ch(o).rows(
    `SELECT unit_id, status, load_id, records, checkpoint FROM ${CH_DATABASE}._sluice_state
      WHERE pipeline = '${pipeline}' AND table_name = '${CH_DATABASE}.${o.name}'
      ORDER BY version DESC LIMIT 1 BY unit_id`,
  );
}

const CH_DATABASE = 'conformance';

function ch(o: Output): ClickHouseServer {
  if (!o.servers.clickhouse) throw new Error('the clickhouse target needs the server: useServers() in the test file');
  return o.servers.clickhouse;
}

/** The file sinks' failpoints: their shared staging and publish (output-files/). */
const FILE_APPEND: CommitFailpoint[] = ['files:after-manifest=2', 'files:before-manifest=2', 'files:after-rename=2'];
const FILE_REPLACE: CommitFailpoint[] = ['replace:after-swap', 'replace:before-swap', 'files:after-rename=1'];

/** A file target's failpoints, the one `npm test` strikes first (see crash.test.ts). */
function fileFailpoints(type: 'jsonl' | 'parquet', storage: 'local' | 's3'): Target['failpoints'] {
  const upload: CommitFailpoint[] = storage === 's3' ? ['files:mid-upload=1'] : [];
  const staged: CommitFailpoint[] = type === 'parquet' ? ['parquet:staged=2'] : [];
  const append =
    storage === 's3' && type === 'jsonl'
      ? [...upload, ...FILE_APPEND]
      : type === 'parquet' && storage === 'local'
        ? [...staged, ...FILE_APPEND]
        : [...FILE_APPEND, ...upload, ...staged];
  return {
    append,
    replace: type === 'parquet' ? [FILE_REPLACE[1]!, FILE_REPLACE[0]!, FILE_REPLACE[2]!] : FILE_REPLACE,
  };
}

function fileTarget(type: 'jsonl' | 'parquet', storage: 'local' | 's3'): Target {
  const ext = type === 'jsonl' ? /\.jsonl(\.gz)?$/ : /\.parquet$/;
  const where = (o: Output): string => (storage === 'local' ? `out/${o.name}` : `s3://${BUCKET}/${o.name}/`);
  return {
    name: storage === 'local' ? type : `${type}-s3`,
    type,
    storage,
    needs: storage === 's3' ? ['s3'] : [],
    sink: (o, { publishEachUnit, ...opts } = {}) => ({
      type,
      path: where(o),
      ...(storage === 's3' && { s3: { endpoint: o.servers.s3!.endpoint, force_path_style: true } }),
      ...(publishEachUnit && { target_file_mb: 0.000001 }),
      ...opts,
    }),
    async rows(o) {
      const live = await liveDir(o, storage, where(o));
      if (live === undefined) return [];
      const files = dataFiles(live).filter((f) => ext.test(f));
      if (files.length === 0) return [];
      // JSON lines as a JSON reader takes them (DuckDB would type a column of numbers and texts as JSON text).
      if (type === 'jsonl') return files.flatMap(jsonLines);
      const list = `[${files.map((f) => `'${f}'`).join(', ')}]`;
      return duckRows(undefined, `SELECT * FROM read_parquet(${list}, union_by_name = true)`);
    },
    async checkpoints(o, pipeline) {
      const live = await liveDir(o, storage, where(o));
      const out = new Map<string, unknown>();
      if (live === undefined) return out;
      for (const name of readdirSync(live).filter((n) => /^_sluice_manifest(\..+)?\.json$/.test(n))) {
        const m = JSON.parse(readFileSync(path.join(live, name), 'utf8')) as {
          pipeline: string;
          units: Record<string, { checkpoint?: unknown }>;
        };
        if (m.pipeline !== pipeline) continue;
        for (const [id, u] of Object.entries(m.units)) if (u.checkpoint !== undefined) out.set(id, u.checkpoint);
      }
      return out;
    },
    failpoints: fileFailpoints(type, storage),
    async leftovers(o) {
      if (storage === 's3') {
        const keys = await o.servers.s3!.keys(BUCKET, `${o.name}/`);
        return keys.filter((k) => /\/\.sluice-(tmp|staged)\//.test(k));
      }
      const root = path.join(o.dir, where(o));
      const spare = readdirIfAny(path.join(o.dir, 'out', `.${o.name}.sluice-generations`));
      return [
        ...filesUnder(path.join(root, '.sluice-tmp')),
        ...filesUnder(path.join(root, '.sluice-staged')),
        ...(spare.length > 1 ? spare : []),
      ];
    },
  };
}

/** Every target, by sink: the file sinks on local disk and on S3. */
export const ALL_TARGETS: readonly Target[] = [
  duckdb,
  postgres,
  fileTarget('jsonl', 'local'),
  fileTarget('jsonl', 's3'),
  fileTarget('parquet', 'local'),
  fileTarget('parquet', 's3'),
  clickhouse,
];

/** `SLUICE_CONFORMANCE_TARGETS`: the target names to run (all when unset). */
const ONLY = process.env.SLUICE_CONFORMANCE_TARGETS?.split(',')
  .map((n) => n.trim())
  .filter(Boolean);

/**
 * The targets whose servers are here, which every scenario runs on, narrowed by SLUICE_CONFORMANCE_TARGETS. S3 is
 * s3rver, an npm dependency; PostgreSQL and ClickHouse are system packages the global setup installs where it can,
 * and without them the run's first lines name their targets as skipped.
 */
export const TARGETS: readonly Target[] = ALL_TARGETS.filter(
  (t) =>
    (ONLY === undefined || ONLY.length === 0 || ONLY.includes(t.name)) &&
    (!t.needs.includes('clickhouse') || systemBinary('clickhouse') !== undefined) &&
    (!t.needs.includes('postgres') || hasPostgres()),
);

const DATABASE = 'conformance';

function pg(o: Output): PostgresServer {
  if (!o.servers.postgres) throw new Error('the postgres target needs the server: useServers() in the test file');
  return o.servers.postgres;
}

/**
 * The directory a reader reads: a local output (a `replace` output is a link to its live generation), or an S3
 * prefix copied to local disk as a listing reader finds it (following the `replace` pointer); undefined: nothing yet.
 */
async function liveDir(o: Output, storage: 'local' | 's3', where: string): Promise<string | undefined> {
  if (storage === 'local') {
    const dir = path.join(o.dir, where);
    return existsSync(dir) ? realpathSync(dir) : undefined;
  }
  const s3 = o.servers.s3!;
  const prefix = where.slice(`s3://${BUCKET}/`.length);
  const keys = await s3.keys(BUCKET, prefix);
  if (keys.length === 0) return undefined;
  let base = prefix;
  if (keys.includes(`${prefix}_sluice_current.json`)) {
    const pointer = JSON.parse((await s3.get(BUCKET, `${prefix}_sluice_current.json`)).toString()) as {
      manifest: string;
    };
    base = `${prefix}${path.posix.dirname(pointer.manifest)}/`;
  }
  // A mirror of what was listed (data files are never rewritten under a name: a key already copied is kept).
  const local = path.join(o.dir, '.s3-read', o.name);
  mkdirSync(local, { recursive: true });
  const wanted = new Set<string>();
  for (const key of keys) {
    if (!key.startsWith(base)) continue;
    const rel = key.slice(base.length);
    if (rel.split('/').some((seg) => seg.startsWith('.'))) continue;
    wanted.add(rel);
    const file = path.join(local, rel);
    if (existsSync(file) && !rel.startsWith('_sluice')) continue;
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, await s3.get(BUCKET, key));
  }
  for (const f of listFiles(local)) if (!wanted.has(path.relative(local, f))) rmSync(f);
  return local;
}

function jsonLines(file: string): Obj[] {
  const bytes = readFileSync(file);
  const text = (file.endsWith('.gz') ? gunzipSync(bytes) : bytes).toString('utf8');
  return text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => canonical(JSON.parse(l)) as Obj);
}

function readdirIfAny(dir: string): string[] {
  return existsSync(dir) ? readdirSync(dir) : [];
}

/** Every file below `dir` (none when it does not exist). */
function filesUnder(dir: string): string[] {
  return existsSync(dir) ? listFiles(dir) : [];
}

function listFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? listFiles(path.join(dir, e.name)) : [path.join(dir, e.name)],
  );
}

/** Data files a listing reader finds under `dir`: hidden directories (temp, staging, generations) left out. */
function dataFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    if (name.startsWith('.') || name.startsWith('_sluice')) continue;
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) out.push(...dataFiles(p));
    else out.push(p);
  }
  return out.sort();
}

/** Registers the file's hooks: the servers its targets need, started before its tests, stopped after them. */
export function useServers(targets: readonly Target[] = TARGETS): Servers {
  const servers: Servers = {};
  const needs = new Set(targets.flatMap((t) => t.needs));
  beforeAll(async () => {
    const [postgresServer, s3, clickhouseServer] = await Promise.all([
      needs.has('postgres') ? startPostgres() : undefined,
      needs.has('s3') ? startS3Server() : undefined,
      needs.has('clickhouse') ? startClickHouse() : undefined,
    ]);
    if (clickhouseServer) {
      servers.clickhouse = clickhouseServer;
      await clickhouseServer.createDatabase(CH_DATABASE);
    }
    if (postgresServer) {
      servers.postgres = postgresServer;
      await postgresServer.createDatabase(DATABASE);
    }
    if (s3) {
      servers.s3 = s3;
      await s3.createBucket(BUCKET);
    }
  }, 120_000);
  afterAll(async () => {
    servers.postgres?.stop();
    servers.clickhouse?.stop();
    await servers.s3?.stop();
  });
  return servers;
}
