/**
 * `npm run bench -- --growth 100000,1000000,10000000`: growth a user can plan on. The DuckDB and Parquet paths, and
 * DuckDB's own full-sample load of the same parts (shown, not judged: how the database's own cost grows), at each
 * record count (the workload's 10k-record parts, generated once per count under bench/.work/): wall and CPU
 * seconds, records per second, seconds per 100k records and peak RSS, each against the 1,000,000 run (or the
 * smallest, when 1M is not in the series). Targets: at every larger count, time per 100k records within 10% of the
 * reference's (time linear in the records) and peak RSS within 10% (memory flat).
 */
import type { CaseResult } from './child.js';
import { formatTable } from './table.js';
import { prepareWorkload, type Workload } from './workload.js';

interface GrowthPath {
  name: string;
  label: string;
  /** Shown, not judged, and run up to this many records only. */
  reference?: { upTo: number };
}

const PATHS: GrowthPath[] = [
  { name: 'sluice-duckdb', label: 'sluice .jsonl.gz → duckdb' },
  { name: 'sluice-parquet', label: 'sluice .jsonl.gz → parquet' },
  // How the database's own cost grows; its memory grows with the records (~1 GB at 200k, ~3 GB at 1M here).
  { name: 'duckdb-own-table', label: "ref: DuckDB's own read_json → table", reference: { upTo: 1_000_000 } },
];
const REFERENCE = 1_000_000;
const TOLERANCE = 0.1;

export async function growthSeries(
  counts: readonly number[],
  measure: (w: Workload, name: string) => Promise<CaseResult>,
): Promise<void> {
  const sizes = [...new Set(counts)].sort((a, b) => a - b);
  const reference = sizes.includes(REFERENCE) ? REFERENCE : sizes[0]!;
  console.log(
    `\ngrowth: sluice at ${sizes.map((n) => n.toLocaleString('en')).join(' / ')} records (target: at every larger ` +
      `count, time per 100k records and peak RSS within ${TOLERANCE * 100}% of the ${reference.toLocaleString('en')} run's)`,
  );
  const lines: string[][] = [
    ['path', 'records', 's', 'CPU s', 'rec/s', 's / 100k', 'vs ref', 'peak RSS', 'vs ref', ''],
  ];
  for (const { name, label, reference: shownOnly } of PATHS) {
    const results = new Map<number, CaseResult>();
    for (const n of sizes) {
      if (shownOnly && n > shownOnly.upTo) {
        console.log(
          `${name} at ${n.toLocaleString('en')}: not run (beyond ${shownOnly.upTo.toLocaleString('en')} records)`,
        );
        continue;
      }
      const w = await prepareWorkload(n, ['parts'], console.log);
      try {
        results.set(n, await measure(w, name));
      } catch (err) {
        console.log(`${name} at ${n}: ${(err as Error).message}`);
      }
    }
    const ref = results.get(reference);
    for (const n of sizes) {
      const r = results.get(n);
      if (!r) continue;
      const per100k = (r.seconds / n) * 100_000;
      const timeRel = ref ? per100k / ((ref.seconds / reference) * 100_000) - 1 : undefined;
      const rssRel = ref ? r.peakRssMb / ref.peakRssMb - 1 : undefined;
      const judged = ref !== undefined && n > reference && !shownOnly;
      const ok = judged && Math.abs(timeRel!) <= TOLERANCE && Math.abs(rssRel!) <= TOLERANCE;
      lines.push([
        label,
        n.toLocaleString('en'),
        r.seconds.toFixed(1),
        r.cpuSeconds.toFixed(1),
        Math.round(r.records / r.seconds).toLocaleString('en'),
        per100k.toFixed(2),
        timeRel === undefined || n === reference ? '' : percent(timeRel),
        `${r.peakRssMb.toFixed(0)} MB`,
        rssRel === undefined || n === reference ? '' : percent(rssRel),
        judged ? (ok ? 'ok' : 'MISSED') : shownOnly ? 'reference' : n === reference ? 'ref' : '',
      ]);
    }
  }
  console.log(formatTable(lines));
}

function percent(x: number): string {
  return `${x >= 0 ? '+' : ''}${(x * 100).toFixed(1)}%`;
}
