/**
 * The fault matrix's cells as pipelines (bench/fault-matrix.ts): the emulator each reads from, the Postgres database
 * and resetting proxy a postgres cell writes through, and the YAML of each pipeline kind into each sink kind.
 */
import path from 'node:path';
import { COMPANY_PROFILES_ID } from '../../src/emulator/data/company-profiles.js';
import { knowledgeFid } from '../../src/emulator/data/serp.js';
import type { EmulatorOptions } from '../../src/emulator/context.js';
import type { FaultConfig } from '../../src/emulator/server.js';
import type { PostgresServer } from '../../test/support/postgres-server.js';
import { startTcpProxy, type TcpProxy } from '../../test/support/tcp-proxy.js';
import { PG_RESET_RATES, type PipelineKind, type SinkKind } from './fault-cells.js';

const API_KEY = 'fault-matrix-key';
/** The data is the same in every cell; only the faults differ by seed. */
const DATA_SEED = 7;
const DEEP_LOOKUP_QUERY = 'Find all AI startups founded after 2020 with more than 50 employees';
const SERP_QUERIES = ['coffee roasters portland', 'ramen berlin', 'bike repair lyon', 'tea shops kyoto'];
export function emulatorOptions(pipeline: PipelineKind, faults: FaultConfig | undefined): Partial<EmulatorOptions> {
  return {
    apiKey: API_KEY,
    seed: DATA_SEED,
    size: 5000,
    // Deep lookup's lifecycle is minutes of emulated time; filter jobs take a fraction of a second at the real
    // pace, which keeps the service clock (Date header, `created`) the local one, as it is for the real service.
    timeScale: pipeline === 'deep_lookup' ? 20_000 : 1,
    jobSchedulingMs: 100,
    ...(faults && { faults }),
  };
}
export interface PgCell {
  /** The cell's database. */
  name: string;
  /** The sink's URL: through the proxy. */
  url: string;
  proxy: TcpProxy;
}

/**
 * The cell's database and the proxy its sink goes through: to the cluster's unix socket (trusted: a reconnect costs
 * no password exchange), resetting connections drawn from `faultSeed` (none for a clean run).
 */
export async function pgCell(server: PostgresServer, name: string, faultSeed: number | undefined): Promise<PgCell> {
  await server.createDatabase(name);
  const proxy = await startTcpProxy({
    target: { path: path.join(server.socketDir, `.s.PGSQL.${server.port}`) },
    ...(faultSeed !== undefined && { random: { seed: faultSeed, rates: PG_RESET_RATES } }),
  });
  return { name, url: `postgres://sluice@127.0.0.1:${proxy.port}/${name}`, proxy };
}

export function pipelineYaml(p: PipelineKind, s: SinkKind, url: string, postgresUrl?: string): string {
  const service = [
    'service:',
    `  base_url: ${url}`,
    `  api_key: ${API_KEY}`,
    // Fast retries keep the matrix quick; Retry-After (1 s) is honoured up to max_delay_ms.
    '  retry: { retries: 4, base_delay_ms: 20, max_delay_ms: 1000 }',
  ];
  const source: Record<PipelineKind, string[]> = {
    snapshot: [
      'source:',
      '  type: snapshot',
      `  dataset_id: ${COMPANY_PROFILES_ID}`,
      "  filter: { name: followers, operator: '>', value: 0 }",
      '  records_limit: 4000',
      '  download: { format: jsonl, compress: true, batch_size: 1000 }',
      '  concurrency: 3',
      '  poll: { interval_ms: 20, timeout_s: 60 }',
    ],
    serp: [
      'source:',
      '  type: serp',
      '  zone: serp_zone',
      '  engine: https://www.google.com',
      `  queries: ${JSON.stringify(SERP_QUERIES)}`,
      '  max_pages: 4',
      '  concurrency: 4',
      'transforms:',
      '  - { type: normalize, preset: serp_organic }',
    ],
    reviews: [
      'source:',
      '  type: reviews',
      '  zone: serp_zone',
      '  engine: https://www.google.com',
      `  from_serp: { queries: ${JSON.stringify(placeQueries())} }`,
      '  max_pages: 4',
      '  concurrency: 4',
      'transforms:',
      '  - { type: normalize, preset: reviews }',
    ],
    deep_lookup: [
      'source:',
      '  type: deep_lookup',
      `  query: ${JSON.stringify(DEEP_LOOKUP_QUERY)}`,
      '  result_limit: 20',
      '  enrich: [{ column_name: cto_name, query: CTO or head of engineering }]',
      '  poll: { interval_ms: 10, timeout_s: 60 }',
    ],
  };
  const sink: Record<SinkKind, string> = {
    duckdb: 'sink: { type: duckdb, path: out/warehouse.duckdb, table: t }',
    parquet: 'sink: { type: parquet, path: out/parquet }',
    jsonl: 'sink: { type: jsonl, path: out/jsonl }',
    postgres: `sink: { type: postgres, url: '${postgresUrl ?? ''}', table: t }`,
  };
  // `append` everywhere: a record written twice must show up, not be merged away.
  return ['version: 1', `name: fm_${p}`, ...service, ...source[p], sink[s], ''].join('\n');
}

/** Queries whose first SERP page has a knowledge panel (a place with reviews) in the emulator's data. */
function placeQueries(): string[] {
  const candidates = ['empire state building', 'louvre museum', 'golden gate bridge', 'sagrada familia', 'big ben'];
  const found = candidates.filter((q) => knowledgeFid(DATA_SEED, 'www.google.com', q) !== undefined).slice(0, 2);
  if (found.length === 0) throw new Error(`none of ${candidates.join(', ')} has a place in the emulator's data`);
  return found;
}
