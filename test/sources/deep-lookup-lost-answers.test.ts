/**
 * Deep lookup's paid calls when their answer is lost. An enrich is resolved in the same run by reading the request
 * (the column is listed once asked for); a trigger cannot be (the service lists no requests), so the run fails
 * saying how to check, and a rerun refuses to trigger again.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { SluiceError } from '../../src/core/errors.js';
import type { Logger, Row, Source } from '../../src/core/types.js';
import type { FaultConfig } from '../../src/emulator/server.js';
import { MemoryStateStore } from '../../src/state/state-store.js';
import { deepLookupSchema, deepLookupSource } from '../../src/sources/deep-lookup.js';
import { sourceContext, startHarness, type Harness } from './crawl-harness.js';

const QUERY = 'Find all AI startups founded after 2020 with more than 50 employees';
const TRIGGER = 'POST /datasets/deep_lookup/v1/trigger';
const ENRICH = 'POST /datasets/deep_lookup/v1/request/:id/enrich';

const open: Harness[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((h) => h.close()));
});

/** The first call of `route` gets `kind`. */
async function harness(route: string, kind: string): Promise<Harness> {
  const faults = { rules: [{ route, rate: 1, max_per_route: 1, faults: { [kind]: 1 } }] } as FaultConfig;
  const h = await startHarness({ seed: 1, timeScale: 20_000, faults });
  open.push(h);
  return h;
}

function source(h: Harness, cfg: Record<string, unknown>): Source {
  return deepLookupSource.create(
    deepLookupSchema.parse({ type: 'deep_lookup', poll: { interval_ms: 10, timeout_s: 30 }, ...cfg }),
    h.deps,
  );
}

function recordingLog(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const push = (level: string) => (m: string) => lines.push(`${level}: ${m}`);
  return { lines, debug: () => undefined, info: push('info'), warn: push('warn'), error: push('error') };
}

const ENRICHED = { query: QUERY, result_limit: 10, enrich: [{ column_name: 'cto_name', query: 'CTO' }] };

async function rows(src: Source, h: Harness, log: Logger): Promise<Row[]> {
  const ctx = sourceContext(h, new MemoryStateStore(), { log });
  const out: Row[] = [];
  for (const u of await src.plan(ctx)) for await (const b of src.read(u, ctx)) out.push(...b);
  return out;
}

describe('deep lookup: lost answers', () => {
  it('enrich ran but its answer was lost (reset_after): the request shows the column, it is not paid again', async () => {
    const h = await harness(ENRICH, 'reset_after');
    const log = recordingLog();
    const got = await rows(source(h, ENRICHED), h, log);
    expect(h.emu.stats.faults.reset_after).toBe(1);
    expect(h.emu.stats.routes[ENRICH]).toBe(1);
    expect(h.emu.stats.paid).toEqual({ trigger: 1, enrich: 1 });
    expect(log.lines.join('\n')).toMatch(/recovered the lost answer of enrich cto_name/);
    expect(got).toHaveLength(10);
    expect(got.every((r) => 'cto_name' in r)).toBe(true);
  });

  it('enrich failed before it started (503): the request lacks the column, so it is called once more', async () => {
    const h = await harness(ENRICH, '503');
    const log = recordingLog();
    const got = await rows(source(h, ENRICHED), h, log);
    expect(h.emu.stats.routes[ENRICH]).toBe(2);
    expect(h.emu.stats.paid).toEqual({ trigger: 1, enrich: 1 });
    expect(log.lines.join('\n')).toMatch(/warn: enrich cto_name got no answer and started nothing: calling it again/);
    expect(got.every((r) => 'cto_name' in r)).toBe(true);
  });

  it('a trigger whose answer was lost fails saying how to check and set request_id; a rerun refuses to trigger', async () => {
    const h = await harness(TRIGGER, 'reset_after');
    const state = new MemoryStateStore();
    const err = (await source(h, ENRICHED)
      .plan(sourceContext(h, state))
      .catch((e: unknown) => e)) as SluiceError;
    expect(err).toBeInstanceOf(SluiceError);
    expect(err.message).toMatch(
      /the deep lookup trigger made at \S+ got no answer: the service may have started a paid request/,
    );
    expect(err.hint).toMatch(/dashboard.*source\.request_id: <its ai_… id>.*--fresh/);
    expect(h.emu.stats.paid).toEqual({ trigger: 1 });

    const again = (await source(h, ENRICHED)
      .plan(sourceContext(h, state))
      .catch((e: unknown) => e)) as SluiceError;
    expect(again.message).toMatch(/got no answer/);
    expect(h.emu.stats.routes[TRIGGER]).toBe(1);

    const notes: string[] = [];
    await source(h, ENRICHED).plan(
      sourceContext(h, state, { dryRun: true, report: (k, t) => notes.push(`${k}: ${t}`) }),
    );
    expect(notes.join('\n')).toMatch(/note: the trigger made at \S+ got no answer: a run refuses to trigger again/);
    expect(h.emu.stats.paid).toEqual({ trigger: 1 });
  });

  it('a trigger the service refused (429 until the client gave up) leaves nothing pending', async () => {
    const faults = { rules: [{ route: TRIGGER, rate: 1, faults: { '429': 1 } }] } as FaultConfig;
    const h = await startHarness({ seed: 1, timeScale: 20_000, faults });
    open.push(h);
    const state = new MemoryStateStore();
    await expect(source(h, { query: QUERY, result_limit: 10 }).plan(sourceContext(h, state))).rejects.toThrow(/429/);
    expect([...state.data.keys()].filter((k) => k.includes('trigger_attempt'))).toEqual([]);
  });
});
