/** `sluice runs`: the run history of a pipeline, run in-process against real runs of a local-file pipeline. */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/cli.js';
import type { RunRecord } from '../../src/state/run-history.js';
import { memoryIo } from './memory-io.js';

/** A pipeline over a local JSONL file (no service) whose key comes from a variable, as in the README. */
function pipeline(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'sluice-runs-'));
  writeFileSync(path.join(dir, 'in.jsonl'), '{"a":1}\n{"a":2}\nnot json\n');
  const file = path.join(dir, 'p.yaml');
  writeFileSync(
    file,
    'version: 1\nname: runs_test\nservice: { base_url: emulator, api_key: "${SLUICE_API_KEY}" }\n' +
      'source: { type: file, paths: [in.jsonl], format: jsonl }\nsink: { type: jsonl, path: out }\n',
  );
  return file;
}

const env = { SLUICE_API_KEY: 'emulator-key' };

describe('sluice runs', () => {
  it('lists runs newest first as a table, as JSON lines, and at most --limit', async () => {
    const file = pipeline();
    const none = memoryIo(env);
    expect(await runCli(['runs', file], none)).toBe(0);
    expect(none.stdout).toEqual(['no runs of runs_test yet']);

    for (const args of [
      ['run', file, '--no-progress'],
      ['run', file, '--no-progress', '--fresh', '--allow-duplicates'],
    ])
      expect(await runCli(args, memoryIo(env))).toBe(0);

    const json = memoryIo(env);
    expect(await runCli(['runs', file, '--json'], json)).toBe(0);
    const runs = json.stdout.map((l) => JSON.parse(l) as RunRecord);
    expect(runs).toHaveLength(2);
    expect(runs[0]!.startedAt >= runs[1]!.startedAt).toBe(true);
    expect(runs[0]!.run).not.toBe(runs[1]!.run);
    expect(runs[0]).toMatchObject({
      pipeline: 'runs_test',
      status: 'succeeded',
      units: { committed: 1, skipped: 0, failed: 0, total: 1 },
      records: 2,
      deadLetters: 1,
      sinks: [{ sink: expect.stringMatching(/^jsonl .*out$/), committedUnits: 1 }],
    });
    expect(runs[0]!.deadLetterReasons).toHaveLength(1);

    // Reading the history needs no API key.
    const table = memoryIo({});
    expect(await runCli(['runs', file, '--limit', '1'], table)).toBe(0);
    const [text, more] = table.stdout;
    const lines = text!.split('\n');
    expect(lines[0]).toMatch(/^RUN\s+STARTED\s+TOOK\s+STATUS\s+UNITS\s+RECORDS\s+BYTES\s+RETRIES\s+DEAD\s+PAID$/);
    expect(lines[1]).toMatch(
      new RegExp(
        `^${runs[0]!.run}\\s+\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d\\s+\\S+ m?s\\s+succeeded\\s+1/1\\s+2\\s+\\S+ (B|KiB)\\s+0\\s+1\\s+0 calls$`,
      ),
    );
    expect(lines.slice(2)).toEqual([
      expect.stringMatching(/^ {4}dead letters: .+ ×1$/),
      expect.stringMatching(/^ {4}sink: jsonl .*out: 1 unit\(s\), 2 records committed$/),
      // The run's warnings are kept with it: here the sink's refusal of the file with a bad line.
      expect.stringMatching(/^ {4}warning: .*jsonl sink refused the file .*; decoding it in JS$/),
    ]);
    expect(more).toBe('(1 older runs: --limit 2)');

    // Nor does any other command that reads what runs left behind (src/cli/offline.ts).
    for (const [command, shows] of [
      ['state', /runs_test/],
      ['schema', /jsonl/],
      ['dead-letters', /^2 dead letters not yet replayed/],
    ] as const) {
      const io = memoryIo({});
      expect(await runCli([command, file], io), `${command}: ${io.stderr.join('\n')}`).toBe(0);
      expect(io.stdout.join('\n')).toMatch(shows);
    }
  });

  it('shows why a run failed', async () => {
    const file = pipeline();
    // No dead letter allowed, and the input has a line that is not JSON: over budget.
    writeFileSync(file, readFileSync(file, 'utf8') + 'max_dead_letters: 0\n');
    expect(await runCli(['run', file, '--no-progress'], memoryIo(env))).toBe(4);
    const io = memoryIo(env);
    expect(await runCli(['runs', file], io)).toBe(0);
    const lines = io.stdout[0]!.split('\n');
    expect(lines[1]).toMatch(/\sfailed\s+1\/1\s/);
    expect(lines[2]).toMatch(
      /^ {4}cause: 1 records dead-lettered, over the budget of 0 \(max_dead_letters\): .+ ×1 \(exit 4\)$/,
    );
  });
});
