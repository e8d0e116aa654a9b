/**
 * Ten emulated nights of an incremental snapshot pipeline (DuckDB merge and Parquet), a cursor set back by hand and a
 * backfill among them, then `sluice report` over them: the page docs/guides/run-history-report.png shows. Not a test
 * (test/cli/report.test.ts checks the page's values); a script to look at the report as a user would:
 *
 *   npx tsx test/cli/report-nights.ts /tmp/nights      # → /tmp/nights/report.html
 *   chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
 *     --disable-component-update --disable-sync --user-data-dir="$(mktemp -d)" \
 *     --screenshot=/tmp/nights/report.png --window-size=1280,2800 file:///tmp/nights/report.html
 *
 * Every night is a real run, in this process, against an emulator whose calendar is at that night (the dataset grows
 * with it) and whose faults are that night's: 429s and 503s on downloads one night (retries), a filter route that
 * is down another (a failed attempt, then one an hour later that succeeds). The pipeline changes as pipelines do: a
 * cast that sends some records to the dead letters from night 6, lineage columns added to the table on night 8 (a
 * schema change). The process's clock is moved to each night (Date only), so the run history has the nights' dates.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { runCli } from '../../src/cli/cli.js';
import { startEmulator } from '../../src/emulator/server.js';
import { memoryIo } from './memory-io.js';

const KEY = 'nights-demo-key';
const DAY = 86_400_000;
const FIRST_NIGHT = Date.parse('2026-11-01T02:30:00Z');

/** Moves `Date` (not timers) by `offset` ms: the run history records the emulated night's date. */
function shiftClock(): (to: number) => void {
  const Real = Date;
  let offset = 0;
  class Shifted extends Real {
    constructor(...args: unknown[]) {
      if (args.length === 0) super(Real.now() + offset);
      else super(...(args as [string]));
    }
    static override now(): number {
      return Real.now() + offset;
    }
  }
  globalThis.Date = Shifted as DateConstructor;
  return (to) => {
    offset = to - Real.now();
  };
}

interface Night {
  at: number;
  faults?: unknown;
  cast?: boolean;
  lineage?: boolean;
  /** Before the night's run: the cursor set back by hand (`sluice state set --cursor`), to load these days again. */
  setCursor?: string;
  /** After the night's run: a backfill of a past window (`sluice run --from --to`). */
  backfill?: { from: string; to: string };
}

const downloadsFlaky = {
  rules: [
    {
      route: 'GET /datasets/snapshots/*/download',
      rate: 1,
      faults: { '503': 1, '429_retry_after': 1 },
      retry_after_s: 0,
      max_per_route: 3,
    },
  ],
};
const filterDown = { rules: [{ route: 'POST /datasets/filter', rate: 1, faults: { '503': 1 } }] };

function pipelineText(dir: string, url: string, n: Night): string {
  return [
    'version: 1',
    'name: company_profiles_nightly',
    'service:',
    `  base_url: ${url}`,
    '  api_key: ${SLUICE_API_KEY}',
    '  retry: { retries: 3, base_delay_ms: 50, max_delay_ms: 200 }',
    'source:',
    '  type: snapshot',
    '  dataset_id: gd_l1vikfnt1wgvvqz95w',
    '  filter: { name: name, operator: is_not_null }',
    '  incremental: { cursor: timestamp, initial: "2025-01-01T00:00:00Z" }',
    '  records_limit: 100000',
    '  download: { batch_size: 1000 }',
    '  poll: { interval_ms: 20 }',
    'transforms:',
    '  - { type: normalize, preset: company_profile }',
    ...(n.cast ? ['  - { type: cast, fields: { stock_info: int } }'] : []),
    'sinks:',
    `  - { type: duckdb, path: ${path.join(dir, 'warehouse.duckdb')}, table: company_profiles, write: merge, primary_key: [company_id]${n.lineage ? ', lineage: true' : ''} }`,
    `  - { type: parquet, path: ${path.join(dir, 'lake')} }`,
    '',
  ].join('\n');
}

async function main(): Promise<void> {
  const dir = path.resolve(process.argv[2] ?? 'report-nights');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const setClock = shiftClock();
  const nights: Night[] = [];
  for (let i = 0; i < 10; i++) {
    const at = FIRST_NIGHT + i * DAY;
    nights.push({
      at,
      ...(i === 3 && { faults: downloadsFlaky }),
      ...(i === 5 && { faults: filterDown }),
      cast: i >= 6,
      lineage: i >= 8,
      // Night 8: someone sets the cursor back three days by hand, to load those days again (`sluice state set`);
      // night 9: a backfill of October after the nightly run (`sluice run --from … --to …`).
      ...(i === 7 && { setCursor: new Date(at - 3 * DAY).toISOString() }),
      ...(i === 8 && { backfill: { from: '2026-10-01T00:00:00Z', to: '2026-10-15T00:00:00Z' } }),
    });
    // The night the filter route was down: tried again an hour later, when it was back.
    if (i === 5) nights.push({ at: at + 3_600_000, cast: false });
  }
  const file = path.join(dir, 'company_profiles_nightly.yaml');
  for (const n of nights) {
    setClock(n.at);
    const emu = await startEmulator({
      apiKey: KEY,
      size: 3000,
      timeScale: 20,
      jobSchedulingMs: 200,
      now: n.at,
      stateFile: path.join(dir, 'emulator-state.json'),
      ...(n.faults !== undefined && { faults: n.faults }),
    });
    try {
      writeFileSync(file, pipelineText(dir, emu.url, n));
      const command = async (what: string, args: string[]): Promise<void> => {
        const io = memoryIo({ SLUICE_API_KEY: KEY });
        const code = await runCli(args, io);
        process.stdout.write(`${new Date(n.at).toISOString()}: ${what}: exit ${code}\n`);
        writeFileSync(
          path.join(dir, `night-${new Date(n.at).toISOString().slice(0, 13)}-${what}.log`),
          [...io.stdout, ...io.stderr].join('\n') + '\n',
        );
      };
      if (n.setCursor !== undefined) await command('state-set', ['state', 'set', file, '--cursor', n.setCursor]);
      await command('run', ['run', file, '--no-progress', '--log-format', 'json']);
      if (n.backfill !== undefined) {
        setClock(n.at + 2 * 3_600_000);
        await command('backfill', [
          'run',
          file,
          '--from',
          n.backfill.from,
          '--to',
          n.backfill.to,
          // The lake appends every load (the warehouse merges): it takes the window's records again, on purpose.
          '--allow-duplicates',
          '--no-progress',
          '--log-format',
          'json',
        ]);
      }
    } finally {
      await emu.close();
    }
  }
  setClock(FIRST_NIGHT + nights.length * DAY);
  const io = memoryIo({ SLUICE_API_KEY: KEY });
  const code = await runCli(['report', file, '--out', path.join(dir, 'report.html')], io);
  process.stdout.write([...io.stdout, ...io.stderr].join('\n') + '\n');
  process.exitCode = code;
}

await main();
