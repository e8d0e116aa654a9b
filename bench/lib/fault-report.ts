/** The fault matrix's report (bench/fault-matrix.ts): its results as a Markdown table, with totals. */
import { CUT_MOMENTS } from '../../test/support/tcp-proxy.js';
import {
  FAULT_WEIGHTS,
  PAID,
  PAID_FAULT_RATE,
  PG_FAULTS,
  PG_RESET_RATES,
  faultSeed,
  type MatrixResult,
} from './fault-cells.js';
import { paidText } from './matrix-common.js';

const FAULT_ORDER = [...Object.keys(FAULT_WEIGHTS), ...PG_FAULTS];

export function faultText(f: Record<string, number>): string {
  const parts = FAULT_ORDER.filter((k) => f[k]).map((k) => `${k}×${f[k]}`);
  return parts.length ? parts.join(' ') : 'none';
}

/** The matrix as a Markdown table, with totals. */
export function formatMatrix(r: MatrixResult): string {
  const head =
    '| seed | pipeline | sink | fault seed | requests | reruns | retries | faults injected | recovered lost answers | equal to clean | paid calls |\n' +
    '|---:|---|---|---:|---:|---:|---:|---|---:|---|---|';
  const rows = r.cells.map(
    (c) =>
      `| ${c.seed} | ${c.pipeline} | ${c.sink} | ${faultSeed(c.seed, c.pipeline, c.sink)} | ${c.requests} | ` +
      `${c.runs - 1}${c.succeeded ? '' : ' (gave up)'} | ${c.retries} | ` +
      `${faultText(c.faults)} | ${c.recovered} | ${c.equal ? 'yes' : 'NO'} | ${PAID[c.pipeline].length ? paidText(c.paid) : '—'}${c.paidOnce ? '' : ' (NOT once)'} |`,
  );
  const totals: Record<string, number> = {};
  for (const c of r.cells) for (const [k, n] of Object.entries(c.faults)) totals[k] = (totals[k] ?? 0) + n;
  const cleanRows = [...new Map(r.cells.map((c) => [`${c.pipeline}/${c.sink}`, c])).values()]
    .map((c) => `${c.pipeline} → ${c.sink}: ${c.clean.rows} rows, ${c.clean.keys} keys`)
    .join('; ');
  const failed = r.cells.flatMap((c) => c.failures.map((f) => `- seed ${c.seed} ${c.pipeline} → ${c.sink}: ${f}`));
  return [
    `Fault matrix: ${r.cells.length} cells, faults on ${Math.round(r.rate * 100)}% of responses ` +
      `(${Math.round(PAID_FAULT_RATE * 100)}% of paid calls; a deep lookup trigger gets 429s only)` +
      (r.cells.some((c) => c.sink === 'postgres')
        ? `; postgres connections reset on ${CUT_MOMENTS.map((m) => `${Math.round(PG_RESET_RATES[m] * 1000) / 10}% of ${m === 'copy' ? 'COPYs' : m === 'commit' ? 'COMMITs' : 'other queries'}`).join(', ')}`
        : '') +
      `, ${r.seconds.toFixed(0)} s.`,
    '',
    head,
    ...rows,
    '',
    `Faults injected in total: ${faultText(totals)}.`,
    `Equal to clean: ${r.cells.filter((c) => c.equal).length}/${r.cells.length}; paid calls exactly once: ` +
      `${r.cells.filter((c) => c.paidOnce).length}/${r.cells.length}; reruns: ${r.cells.reduce((s, c) => s + c.runs - 1, 0)}.`,
    `Clean outputs: ${cleanRows}.`,
    ...(failed.length ? ['', 'Runs that failed (then rerun):', ...failed] : []),
    '',
  ].join('\n');
}
