/**
 * A `file` source pipeline needs no `service` block: it validates, plans and runs without one, and nothing starts
 * the emulator. A source that calls the service still needs the block, and the loader says so at the file's line.
 */
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SluiceError } from '../../src/core/errors.js';
import { createLogger } from '../../src/runtime/logger.js';
import { planPipeline } from '../../src/operations/plan.js';
import { runPipeline } from '../../src/operations/run.js';
import { ServiceConnection, type RetryCounter } from '../../src/runtime/service.js';
import { loadPipeline, validatePipeline } from '../../src/pipeline/load.js';

const quiet = { fresh: false, logFormat: 'text', quiet: true, progress: false } as const;

function workspace(pipeline: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'sluice-no-service-'));
  writeFileSync(path.join(dir, 'in.jsonl'), '{"id":1,"name":"a"}\n{"id":2,"name":"b"}\n');
  const file = path.join(dir, 'p.yaml');
  writeFileSync(file, pipeline);
  return file;
}

const FILE_PIPELINE = `version: 1
name: no_service
source:
  type: file
  paths: [in.jsonl]
  format: jsonl
sink:
  type: jsonl
  path: out
`;

describe('a file source without a service block', () => {
  it('validates, plans and runs; no emulator is started', async () => {
    const file = workspace(FILE_PIPELINE);
    expect((await validatePipeline(file, {})).problems).toEqual([]);
    const p = await loadPipeline(file, {});
    expect(p.config.service).toBeUndefined();

    const connections: ServiceConnection[] = [];
    const plan = await planPipeline(p, { onService: (s) => connections.push(s) });
    expect(plan.units).toHaveLength(1);

    const summary = await runPipeline(p, quiet, { onService: (s) => connections.push(s) });
    expect(summary.records).toBe(2);
    expect(connections.length).toBeGreaterThan(0);
    for (const c of connections) expect(c.embedded).toBeUndefined();
    const out = path.join(path.dirname(file), 'out');
    const data = readdirSync(out).filter((f) => f.endsWith('.jsonl'));
    const rows = data.flatMap((f) => readFileSync(path.join(out, f), 'utf8').split('\n').filter(Boolean));
    expect(rows.map((r) => (JSON.parse(r) as { id: number }).id).sort()).toEqual([1, 2]);
  });

  it('a source that calls the service still needs the block: a config error that names it', async () => {
    const file = workspace(`version: 1
name: needs_service
source:
  type: serp
  zone: serp_zone
  queries: [coffee]
sink:
  type: jsonl
  path: out
`);
    const { problems } = await validatePipeline(file, {});
    expect(problems).toHaveLength(1);
    expect(problems[0]!.message).toMatch(/no `service` block, and a `serp` source calls the service/);
    expect(problems[0]!.hint).toMatch(/add `service:/);
  });

  it('asking for the service without a service block fails with the fix, not a crash', async () => {
    const counter: RetryCounter = { retries: 0 };
    const conn = new ServiceConnection(undefined, tmpdir(), createLogger({ format: 'text', level: 'error' }), counter);
    const err = await conn.get().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SluiceError);
    expect((err as SluiceError).message).toMatch(/no `service` block/);
    await conn.close();
  });
});
