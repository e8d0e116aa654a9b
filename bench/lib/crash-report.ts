/** The crash matrix's report (bench/crash-matrix.ts): its results as a Markdown table, with totals. */
import { PAID, cellKey, cellPassed, type MatrixResult } from './crash-cells.js';
import { paidText } from './matrix-common.js';

/** The matrix as a Markdown table, with totals. */
export function formatMatrix(r: MatrixResult): string {
  const head =
    '| pipeline | sink | killed at | died there | partial, uncommitted or duplicate data visible | rows visible after the kill | committed files not yet in place | reruns needed | rerun equal to clean | paid calls | leftovers after rerun |\n' +
    '|---|---|---|---|---|---:|---:|---:|---|---|---|';
  const rows = r.cells.map((c) => {
    const at =
      'external' in c.kill ? `kill -9 from outside, ${c.killDelayMs} ms after the 2nd download` : c.kill.failpoint;
    const paid = PAID[c.pipeline].length
      ? `${paidText(c.paid)}${c.paidOnce ? '' : ' (NOT once)'}${c.recoveredJob ? ' (job found by the rerun)' : ''}`
      : '—';
    return (
      `| ${c.pipeline} | ${c.sink} | ${at} | ${c.died ? 'yes' : `NO (${c.endedAs})`} | ` +
      `${c.visibleProblems.length ? `YES: ${c.visibleProblems.join('; ')}` : 'no'} | ` +
      `${c.visibleRows ?? 0} of ${c.clean.rows} | ${c.sink.startsWith('duckdb') ? '—' : c.pendingFiles} | ` +
      `${c.rerunSucceeded ? c.reruns : `${c.reruns} (all failed)`} | ${c.equal ? 'yes' : 'NO'} | ${paid} | ` +
      `${c.leftovers.length ? c.leftovers.join(' ') : 'none'} |`
    );
  });
  const clean = [...new Map(r.cells.map((c) => [cellKey(c), c])).values()]
    .map((c) => `${c.pipeline} → ${c.sink} ${c.clean.rows} rows, ${c.clean.keys} keys, ${c.clean.checksum}`)
    .join('; ');
  const failed = r.cells.flatMap((c) => c.failures.map((f) => `- ${c.label}: ${f}`));
  return [
    `Crash matrix: ${r.cells.length} cells, each a \`sluice run\` killed with SIGKILL and then run again; ` +
      `${r.seconds.toFixed(0)} s.`,
    '',
    head,
    ...rows,
    '',
    `Passed: ${r.cells.filter(cellPassed).length}/${r.cells.length} (died at the failpoint, nothing partial or ` +
      'duplicated visible after the kill, one rerun gave the clean output, the paid filter job started once, no ' +
      'leftovers). A data file appears only after the manifest commits it; "committed files not yet in place": ' +
      'the kill came between the commit and the renames, and the rerun moved them in before anything else.',
    `Clean outputs: ${clean}.`,
    ...(failed.length ? ['', 'Failures:', ...failed] : []),
    '',
  ].join('\n');
}
