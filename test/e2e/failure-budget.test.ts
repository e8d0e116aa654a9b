/**
 * `max_dead_letters` with the real CLI (issue 11): a run whose records are dead-lettered beyond the budget stops
 * taking units, exits with the failure-budget code (4) naming the count, the budget and the reasons, and keeps what
 * it committed; the same command with a raised budget resumes and completes the run. The CLI runs in this process
 * (sluiceInProcess): nothing here needs a process of its own.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { failure, query, sluiceInProcess, workspace, type Result } from './harness.js';

const run = (file: string): Promise<Result> => sluiceInProcess(['run', file, '--no-progress']);

describe('a failure budget', () => {
  it('exceeded: exit code 4, committed units intact; a raised budget resumes and completes', async () => {
    const ws = workspace();
    const input = path.join(ws.pipelines, 'in');
    mkdirSync(input);
    // Six files (units), read one at a time in name order, each with a good record and one that is not JSON.
    for (let i = 1; i <= 6; i++)
      writeFileSync(path.join(input, `part-${i}.jsonl`), `{"id":${i},"name":"ok ${i}"}\n{"id":${i}, broken\n`);
    const text = (budget: number): string => `version: 1
name: budget
service: { base_url: emulator, api_key: emulator-key }
source: { type: file, paths: [in], format: jsonl, concurrency: 1 }
sink: { type: duckdb, path: out/budget.duckdb, table: items }
max_dead_letters: ${budget}
`;
    const file = ws.write('budget.yaml', text(2));
    const db = path.join(ws.pipelines, 'out/budget.duckdb');
    const ids = async (): Promise<number[]> =>
      (await query('SELECT id FROM w.items ORDER BY id', { duckdb: db })).map((r) => Number(r.id));

    const r1 = await run(file);
    expect(r1.code, r1.stderr).toBe(4);
    const { error, fix } = failure(r1);
    expect(error).toMatch(/^error: 3 records dead-lettered, over the budget of 2 \(max_dead_letters\): .+ ×3$/);
    expect(fix).toMatch(/raise max_dead_letters/);
    // The unit whose letter spent the budget finished its commit; no unit started after it.
    expect(await ids()).toEqual([1, 2, 3]);
    const letters = readFileSync(path.join(ws.pipelines, '.sluice/budget/dead-letters.jsonl'), 'utf8');
    expect(letters.trim().split('\n')).toHaveLength(3);

    writeFileSync(file, text(10));
    const r2 = await run(file);
    expect(r2.code, r2.stderr).toBe(0);
    expect(r2.stderr).toMatch(/resuming budget/);
    expect(r2.stdout).toMatch(/units +6\/6 \(3 already committed, 0 failed\)/);
    expect(r2.stdout).toMatch(/dead letters 3 \(.+ ×3\)/);
    expect(await ids()).toEqual([1, 2, 3, 4, 5, 6]);

    const history = await sluiceInProcess(['runs', file, '--json']);
    expect(history.code, history.stderr).toBe(0);
    const runs = history.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(runs.map((r) => [r.attempt, r.status, r.exitCode, r.resumed])).toEqual([
      [2, 'succeeded', 0, true],
      [1, 'failed', 4, false],
    ]);
  });
});
