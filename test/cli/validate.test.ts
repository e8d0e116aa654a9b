import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');

/** The installed entry point, as a user runs it. */
function sluice(...args: string[]) {
  const env = { ...process.env };
  delete env.SLUICE_BASE_URL;
  delete env.SLUICE_API_KEY;
  const r = spawnSync(process.execPath, ['bin/sluice.js', ...args], { cwd: root, env, encoding: 'utf8' });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('sluice validate', () => {
  it('passes every example pipeline', () => {
    const files = readdirSync(path.join(root, 'pipelines'))
      .filter((f) => f.endsWith('.yaml'))
      .map((f) => `pipelines/${f}`);
    expect(files.length).toBeGreaterThanOrEqual(9);
    const r = sluice('validate', ...files);
    expect(r.stderr).toBe('');
    expect(r.stdout.trim().split('\n')).toEqual(files.map((f) => `${f}: ok`));
    expect(r.status).toBe(0);
  });

  it('prints every problem of every file as file:line:col and exits 2, a configuration error', () => {
    const a = 'test/fixtures/broken/many-problems.yaml';
    const b = 'test/fixtures/broken/missing-env.yaml';
    const r = sluice('validate', a, 'pipelines/serp.yaml', b);
    expect(r.status).toBe(2);
    const problems = r.stdout.split('\n').filter((l) => /^\S+:\d+:\d+: /.test(l));
    expect(problems).toEqual([
      `${a}:3:7: name: must be letters, digits, \`_\` and \`-\` (at most 64), starting with a letter or digit`,
      `${a}:7:21: service.retry.retries: must be ≥ 0`,
      `${a}:9:3: source: missing required key "zones"`,
      `${a}:10:3: source.zone: unknown key "zone" (did you mean "zones"?)`,
      `${a}:12:37: transforms[0].fields.rating: a string ("float") is not allowed`,
      `${a}:13:33: sink.compres: unknown key "compres" (did you mean "compress"?)`,
      `${b}:5:12: environment variable SLUICE_TEST_UNSET_KEY is not set`,
    ]);
    expect(r.stdout).toContain('pipelines/serp.yaml: ok');
    expect(r.stdout).toContain('  fix: use one of: int, double, text, bool, timestamp, date, json');
    expect(r.stderr.trim()).toBe('7 problems in 3 files');
  });
});
