/**
 * Every source kind (src/sources/index.ts) into Postgres AND DuckDB in one run, from the shipped example of that
 * kind, both tables compared as data (test/support/compare-tables.ts: rows, distinct keys, a checksum over every
 * value): `append` for every kind; `merge` on the kind's real key and `replace` for most, each run twice — the second
 * run leaves merge's keys once each and replace's table the second run's.
 *
 * The runs are in-process (`runPipeline`) against one emulator and one throwaway cluster, the kinds at once (each
 * its own database, workspace and DuckDB files): most of a run is waiting on the service.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runPipeline } from '../../src/operations/run.js';
import { loadPipeline } from '../../src/pipeline/load.js';
import { sourceDefs } from '../../src/sources/index.js';
import { digest, duckTableRows, pgTableRows, type Digest } from '../support/compare-tables.js';
import { API_KEY, variant, workspace, type Workspace } from './harness.js';
import { hasPostgres } from '../support/postgres-server.js';
import { postgresAndEmulator } from './postgres-fixture.js';

const live = postgresAndEmulator();

type Mode = 'append' | 'merge' | 'replace';

interface Kind {
  /** The source's `type`. */
  source: string;
  /** The shipped example of this kind, and the changes that make it quick here. */
  example: string;
  changes?: [string | RegExp, string][];
  /** Identifies a record: merge's primary key, and the digests' distinct keys. */
  key: string[];
  /** The write modes besides `append`, each run twice. */
  twice: Exclude<Mode, 'append'>[];
  /** Values that differ between two correct runs (fetch times, per-request ids). */
  perRun?: string[];
  /** Every run's rows differ from the last's (they carry their fetch time): replace's table shows whose it is. */
  stamped?: true;
  /** Runs between the two runs (the file kind changes its file). */
  between?: (ws: Workspace) => void;
}

const POLL = (after: string): [string, string] => [after, `${after}\n  poll: { interval_ms: 50 }`];

const KINDS: Kind[] = [
  {
    source: 'snapshot',
    example: 'company_profiles.yaml',
    changes: [POLL('batch_size: 1000 }'), ['records_limit: 50000', 'records_limit: 1500']],
    key: ['company_id'],
    twice: [],
  },
  {
    source: 'deep_lookup',
    example: 'deep_lookup.yaml',
    changes: [POLL('download: { format: json }'), ['result_limit: 40', 'result_limit: 20']],
    key: ['company_name'],
    twice: [],
  },
  {
    source: 'serp',
    example: 'serp.yaml',
    changes: [['max_pages: 5', 'max_pages: 1']],
    key: ['query', 'link'],
    twice: ['replace'],
    perRun: ['fetched_at', 'request_id'],
    stamped: true,
  },
  {
    source: 'reviews',
    example: 'reviews.yaml',
    changes: [
      [/queries: \[.*\]/, "queries: ['empire state building', 'louvre museum']"],
      ['max_pages: 1\n', 'max_pages: 2\n'],
    ],
    key: ['review_id'],
    twice: [],
  },
  { source: 'datasets', example: 'datasets.yaml', key: ['id'], twice: ['merge'] },
  {
    source: 'zone_cost',
    example: 'zone_cost.yaml',
    key: ['zone', 'account', 'bucket'],
    twice: ['replace'],
    // The zone's traffic grows with every request the other kinds make through it.
    perRun: ['bw', 'cost', 'reqs_serp', 'reqs_unblocker'],
  },
  { source: 'countries', example: 'countries.yaml', key: ['zone_type', 'country_code'], twice: ['merge', 'replace'] },
  {
    source: 'file',
    example: 'file.yaml',
    key: ['id'],
    twice: ['merge', 'replace'],
    // The second run reads a changed file (the source skips unchanged ones): 30 of the 50 records again, with new
    // names, and 5 new ones.
    between: (ws) => {
      const file = path.join(ws.pipelines, 'data/sample.jsonl');
      const lines = readFileSync(file, 'utf8').trim().split('\n');
      const changed = lines.slice(20).map((l) => {
        const r = JSON.parse(l) as { id: number; name: string };
        return JSON.stringify({ ...r, name: `${r.name} (renamed)` });
      });
      const added = [50, 51, 52, 53, 54].map((id) => JSON.stringify({ id, name: `item ${id}`, tags: ['new'] }));
      writeFileSync(file, [...changed, ...added].join('\n') + '\n');
    },
  },
];

function sinksYaml(db: string, kind: Kind): string {
  const lines = ['sinks:'];
  for (const mode of ['append', ...kind.twice] as Mode[]) {
    const table = `${kind.source}_${mode}`;
    const extra = mode === 'merge' ? `, primary_key: [${kind.key.join(', ')}]` : '';
    lines.push(`  - { type: postgres, url: '${live.server.url(db)}', table: ${table}, write: ${mode}${extra} }`);
    lines.push(`  - { type: duckdb, path: ../out/${mode}.duckdb, table: ${table}, write: ${mode}${extra} }`);
  }
  return lines.join('\n') + '\n';
}

async function run(file: string): Promise<void> {
  const env = { ...process.env, SLUICE_BASE_URL: live.emu.url, SLUICE_API_KEY: API_KEY };
  await runPipeline(await loadPipeline(file, env), { fresh: false, logFormat: 'text', quiet: true, progress: false });
}

interface Tables {
  pg: Digest;
  duck: Digest;
  /** Less the values that differ between correct runs. */
  stable: Digest;
  /** The runs whose units the Postgres table's `_sluice_state` rows name. */
  runs: string[];
}

async function tables(ws: Workspace, db: string, kind: Kind, mode: Mode): Promise<Tables> {
  const table = `${kind.source}_${mode}`;
  const [pgRows, duckRows] = await Promise.all([
    pgTableRows(live.server, db, table),
    duckTableRows(path.join(ws.out, `${mode}.duckdb`), table),
  ]);
  const runs = await live.server.query<{ run: string }>(
    db,
    `SELECT DISTINCT split_part(unit_id, '/', 1) AS run FROM _sluice_state WHERE table_name = $1 ORDER BY 1`,
    [`public.${table}`],
  );
  const pg = digest(pgRows, kind.key);
  return {
    pg,
    duck: digest(duckRows, kind.key),
    stable: kind.perRun ? digest(pgRows, kind.key, kind.perRun) : pg,
    runs: runs.map((r) => r.run),
  };
}

describe.skipIf(!hasPostgres())('postgres sink: every source kind, beside the duckdb sink', () => {
  it('covers every source type there is', () => {
    expect(KINDS.map((k) => k.source).sort()).toEqual(sourceDefs.map((d) => d.type).sort());
    expect(KINDS.filter((k) => k.twice.includes('merge')).length).toBeGreaterThanOrEqual(3);
    expect(KINDS.filter((k) => k.twice.includes('replace')).length).toBeGreaterThanOrEqual(3);
  });

  for (const kind of KINDS)
    it.concurrent(
      `${kind.source}: append${kind.twice.map((m) => `, ${m} twice`).join('')} — Postgres holds what DuckDB holds`,
      async () => {
        const ws = workspace();
        const db = `sources_${kind.source}`;
        await live.server.createDatabase(db);
        const file = ws.write(
          'both.yaml',
          variant(ws, kind.example, [...(kind.changes ?? []), [/\nsink:[\s\S]*$/, `\n${sinksYaml(db, kind)}`]]),
        );
        await run(file);
        const first = new Map<Mode, Tables>();
        for (const mode of ['append', ...kind.twice] as Mode[]) {
          const t = await tables(ws, db, kind, mode);
          expect(t.pg.rows, `${mode}: rows`).toBeGreaterThan(0);
          expect(t.pg.keys, `${mode}: each record once`).toBe(t.pg.rows);
          expect(t.pg, mode).toEqual(t.duck);
          first.set(mode, t);
        }
        if (kind.twice.length === 0) return;

        kind.between?.(ws);
        await run(file);
        const once = first.get('append')!;
        const append = await tables(ws, db, kind, 'append');
        expect(append.pg, 'append after two runs').toEqual(append.duck);
        expect(append.runs, 'append holds both runs').toHaveLength(2);
        if (!kind.between) expect(append.pg.rows, 'append holds both runs’ rows').toBe(2 * once.pg.rows);

        if (kind.twice.includes('merge')) {
          const merge = await tables(ws, db, kind, 'merge');
          expect(merge.pg, 'merge after two runs').toEqual(merge.duck);
          expect(merge.pg.keys, 'merge: each key once').toBe(merge.pg.rows);
          // Unchanged data merged again is the same table; the changed file adds its new keys and updates the rest.
          if (!kind.between) expect(merge.stable, 'merge: the same table').toEqual(first.get('merge')!.stable);
          else expect(merge.pg.rows).toBe(once.pg.rows + 5);
        }
        if (kind.twice.includes('replace')) {
          const replace = await tables(ws, db, kind, 'replace');
          const before = first.get('replace')!;
          expect(replace.pg, 'replace after two runs').toEqual(replace.duck);
          expect(replace.pg.keys, 'replace: each key once').toBe(replace.pg.rows);
          expect(replace.runs, 'replace holds the second run’s units only').toHaveLength(1);
          expect(replace.runs[0]).not.toBe(before.runs[0]);
          if (kind.between) expect(replace.pg.rows, 'replace: the changed file’s records').toBe(35);
          else expect(replace.stable, 'replace: the same data, once').toEqual(before.stable);
          // Where values differ by run, the table holds the second run's: DuckDB's replace table is that run's.
          if (kind.stamped) expect(replace.pg.checksum).not.toBe(before.pg.checksum);
        }
      },
    );
});
