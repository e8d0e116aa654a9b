/**
 * The servers from system packages (system-packages.ts): found where their package or a variable puts them, and when
 * missing and not installable, named once at the top of the run with the command that brings them in, their tests
 * skipped — a run of the files that need them passes, never fails for a missing install.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { hasSystemPackage, installMissing, installNotice, systemBinary } from './system-packages.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const saved = { ...process.env };
afterEach(() => {
  for (const k of ['SLUICE_PRETEND_MISSING', 'SLUICE_PG_BINDIR', 'SLUICE_PUSHGATEWAY'])
    if (saved[k] === undefined) delete process.env[k];
    else process.env[k] = saved[k];
});

describe('system packages', () => {
  it('finds a binary a variable names (SLUICE_PG_BINDIR: the directory holding initdb)', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'sluice-pgbin-'));
    try {
      writeFileSync(path.join(dir, 'initdb'), '#!/bin/sh\n');
      chmodSync(path.join(dir, 'initdb'), 0o755);
      process.env.SLUICE_PG_BINDIR = dir;
      expect(systemBinary('postgres')).toBe(path.join(dir, 'initdb'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('one not here and not installable: reported missing with why, and the notice names its tests and the command', () => {
    process.env.SLUICE_PRETEND_MISSING = 'postgres,pushgateway';
    expect(hasSystemPackage('postgres')).toBe(false);
    expect(systemBinary('pushgateway')).toBeUndefined();
    const report = installMissing(['postgres', 'pushgateway']);
    expect(report).toMatchObject({ installed: [], missing: ['postgres', 'pushgateway'] });
    expect(report.why).toBe('SLUICE_PRETEND_MISSING=postgres,pushgateway');
    const notice = installNotice(report)!;
    expect(notice).toMatch(/^system packages: SKIPPED \(SLUICE_PRETEND_MISSING=postgres,pushgateway\): /);
    expect(notice).toContain('the tests against a real PostgreSQL');
    expect(notice).toContain('the metrics tests (test/observe/metrics.test.ts)');
    expect(notice).toMatch(/bring them in with: (sudo )?apt-get install -y postgresql-15 prometheus-pushgateway\n$/);
  });

  it('nothing missing: no notice', () => {
    expect(installNotice({ installed: [], users: [], missing: [] })).toBeUndefined();
    expect(installNotice({ installed: ['python3'], users: ['postgres'], missing: [] })).toBe(
      "system packages: installed python3 for the Airflow recipe's compile check (test/deploy/recipes.test.ts)\n" +
        'system packages: created the OS user postgres (as root, the server runs as it)\n',
    );
  });

  it(
    'a run of the files that need a missing server skips their tests, says so once at the top, and passes',
    { timeout: 120_000 },
    () => {
      const files = ['test/observe/metrics.test.ts', 'test/sinks/postgres/copy.test.ts', 'test/observe/checks.test.ts'];
      const r = spawnSync(process.execPath, [path.join(ROOT, 'node_modules/vitest/vitest.mjs'), 'run', ...files], {
        cwd: ROOT,
        encoding: 'utf8',
        env: { ...process.env, SLUICE_PRETEND_MISSING: 'postgres,pushgateway', SLUICE_WORKERS: '1', NO_COLOR: '1' },
      });
      const out = r.stdout + r.stderr;
      expect(r.status, out).toBe(0);
      expect(out.match(/system packages: SKIPPED/g)).toHaveLength(1);
      expect(out).toMatch(/Test Files\s+3 skipped \(3\)/);
      expect(out).not.toMatch(/\bfailed\b/);
    },
  );
});
