/**
 * Deep lookup end to end: enrichment columns arrive filled in the output, and `max_cost` refuses paid calls before
 * they are made (the emulator's paid counters prove nothing was triggered or enriched). The CLI runs in this process
 * (sluiceInProcess): nothing here needs a process of its own.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EmulatorHandle } from '../../src/emulator/server.js';
import {
  api,
  emulator,
  failure,
  query,
  runOkInProcess,
  sluiceInProcess,
  variant,
  workspace,
  type Obj,
} from './harness.js';

let emu: EmulatorHandle;
beforeAll(async () => {
  emu = await emulator({ seed: 3 });
});
afterAll(() => emu?.close());

function paid(): { trigger: number; enrich: number } {
  return { trigger: emu.stats.paid.trigger ?? 0, enrich: emu.stats.paid.enrich ?? 0 };
}

/** The example with faster polling and the given replacements. */
function example(replace: [string | RegExp, string][]): { file: string; out: string } {
  const ws = workspace();
  const text = variant(ws, 'deep_lookup.yaml', [
    [/download: \{ format: json \}/, 'download: { format: json }\n  poll: { interval_ms: 50 }'],
    ...replace,
  ]);
  return { file: ws.write('deep_lookup_variant.yaml', text), out: `${ws.out}/deep_lookup` };
}

describe('deep lookup with enrich', () => {
  it('fills every enriched column with what the service holds, as CSV too', async () => {
    const { file, out } = example([
      [
        /enrich:\n(.*\n)/,
        'enrich:\n$1    - { column_name: funding_stage, query: What is the latest funding stage? }\n',
      ],
      ['format: json }\n', 'format: csv }\n'],
      ['result_limit: 40', 'result_limit: 25'],
    ]);
    const before = paid();
    const r = await runOkInProcess(file, emu);
    expect(paid()).toEqual({ trigger: before.trigger + 1, enrich: before.enrich + 2 });

    const id = /deep lookup request (ai_\w+) triggered/.exec(r.stderr)?.[1];
    const request = (await api(emu, 'GET', `/datasets/deep_lookup/v1/request/${id}`)) as Obj;
    const data = request.data as Obj[];
    expect(data.length).toBe(request.matched_records);
    expect(data.length).toBeGreaterThan(0);
    const rows = await query(`SELECT * FROM read_json('${out}/*.jsonl')`);
    expect(rows).toHaveLength(data.length);
    for (const column of ['ceo_name', 'funding_stage']) {
      expect(Object.keys(rows[0]!)).toContain(column);
      const filled = rows.filter((x) => x[column] !== null && x[column] !== '').length;
      expect(filled, column).toBeGreaterThan(rows.length / 2);
      const pairs = (xs: Obj[]): string[] => xs.map((x) => `${x.company_name}=${x[column] ?? ''}`).sort();
      expect(pairs(rows), column).toEqual(pairs(data));
    }
  });
});

describe('max_cost', () => {
  it('refuses to trigger when the worst case exceeds it: exit 1, one-line cause, nothing paid', async () => {
    const { file } = example([['max_cost: $100.00', 'max_cost: $10.00']]);
    const before = paid();
    const r = await sluiceInProcess(['run', file, '--no-progress'], { service: emu });
    expect(r.code).toBe(1);
    const f = failure(r);
    expect(r.stderr.match(/^error:/gm)).toHaveLength(1);
    expect(f.error).toBe(
      'error: refusing to trigger the request and enrich it: worst-case cost $42.00 exceeds max_cost $10.00',
    );
    expect(f.fix).toMatch(/^fix: .*(result_limit|max_cost)/);
    expect(r.stdout).toBe('');
    expect(paid()).toEqual(before);
  });

  it('bounds the whole run: a budget that covers the trigger but not the enrichment pays for nothing', async () => {
    const { file } = example([['max_cost: $100.00', 'max_cost: $41.00']]);
    const before = paid();
    const r = await sluiceInProcess(['run', file, '--no-progress'], { service: emu });
    expect(r.code).toBe(1);
    const f = failure(r);
    expect(r.stderr.match(/^error:/gm)).toHaveLength(1);
    // result_limit 40 at $1.00 each, plus $0.05 per record for the column: $42.00 > $41.00.
    expect(f.error).toBe(
      'error: refusing to trigger the request and enrich it: worst-case cost $42.00 exceeds max_cost $41.00',
    );
    expect(paid()).toEqual(before);
  });
});
