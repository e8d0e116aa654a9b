/**
 * Fatal errors from the real executable: exit status 1 (the service or the network said no; a config error is 2,
 * see test/reliability/bad-input/), and stderr ends with `error: <cause>` on one line and
 * `  fix: <what to do>`. The key the user passed never shows up in the output.
 *
 * The runs with a wrong key are real processes: the key is a secret registered process-wide (src/core/redact.ts), so
 * in this process a second command would have it redacted even if that command forgot to register it. The others
 * run the CLI in this process (sluiceInProcess).
 */
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EmulatorHandle } from '../../src/emulator/server.js';
import { emulator, failure, sluice, sluiceInProcess, variant, workspace } from './harness.js';

const WRONG_KEY = 'wrong-key-5d1e0b77';

let emu: EmulatorHandle;
beforeAll(async () => {
  emu = await emulator({ seed: 9, size: 2000 });
});
afterAll(() => emu?.close());

/** A port on 127.0.0.1 that nothing listens on (bound, then released). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('fatal errors', () => {
  it('a wrong API key: 401, and the fix says to set SLUICE_API_KEY; nothing paid, the key never printed', async () => {
    const ws = workspace();
    const paidBefore = { ...emu.stats.paid };
    const r = await sluice(['run', ws.pipeline('company_profiles.yaml'), '--no-progress'], {
      env: { SLUICE_BASE_URL: emu.url, SLUICE_API_KEY: WRONG_KEY },
    });
    // Configuration (exit 2): nothing to resume.
    expect(r.code).toBe(2);
    expect(failure(r)).toEqual({
      // The preflight's first call (before any paid call) is refused; the error names the option, not the route.
      error: 'error: the service refused the API key (service.api_key): Invalid credentials',
      fix: 'fix: the API key was refused: set SLUICE_API_KEY to a valid key',
    });
    expect(r.stdout).toBe('');
    expect(r.stdout + r.stderr).not.toContain(WRONG_KEY);
    expect(emu.stats.paid).toEqual(paidBefore);
  });

  it('a wrong API key on a service command says the same', async () => {
    const r = await sluice(['datasets', 'list'], { env: { SLUICE_BASE_URL: emu.url, SLUICE_API_KEY: WRONG_KEY } });
    expect(r.code).toBe(2);
    expect(failure(r).fix).toBe('fix: the API key was refused: set SLUICE_API_KEY to a valid key');
    expect(r.stdout + r.stderr).not.toContain(WRONG_KEY);
  });

  it('an unknown dataset: the error names it, the fix names the option and how to list the ids', async () => {
    const ws = workspace();
    const file = ws.write(
      'unknown_dataset.yaml',
      variant(ws, 'company_profiles.yaml', [['dataset_id: gd_l1vikfnt1wgvvqz95w', 'dataset_id: gd_nosuchdataset1']]),
    );
    const filters = emu.stats.paid.filter ?? 0;
    const r = await sluiceInProcess(['run', file, '--no-progress'], { service: emu });
    expect(r.code).toBe(2);
    const f = failure(r);
    // Not in the dataset list (the metadata, which most datasets lack, decides nothing).
    expect(f.error).toMatch(
      /^error: dataset gd_nosuchdataset1 does not exist: it is not among the \d+ datasets the service lists$/,
    );
    expect(f.fix).toMatch(/^fix: check source\.dataset_id: `sluice datasets list`/);
    expect(emu.stats.paid.filter ?? 0).toBe(filters);
  });

  it('an unknown snapshot id: 404 naming the snapshot', async () => {
    const ws = workspace();
    const file = ws.write(
      'unknown_snapshot.yaml',
      variant(ws, 'company_profiles.yaml', [
        [/ {2}filter:\n(?: {4}.*\n)+/, '  snapshot_id: snap_nosuchsnapshot1\n'],
        [/ {2}files: .*\n/, ''],
        [/ {2}records_limit: .*\n/, ''],
      ]),
    );
    const r = await sluiceInProcess(['run', file, '--no-progress'], { service: emu });
    expect(r.code).toBe(1);
    const f = failure(r);
    expect(f.error).toMatch(/^error: .*snap_nosuchsnapshot1.*404/);
    expect(f.fix).toMatch(/^fix: /);
  });

  it('a service that cannot be reached: `cannot reach <url>`, and the fix points at base_url', async () => {
    const ws = workspace();
    const file = ws.write(
      'unreachable.yaml',
      variant(ws, 'countries.yaml', [[/api_key: (.*)\n/, 'api_key: $1\n  retry: { retries: 0, base_delay_ms: 10 }\n']]),
    );
    const url = `http://127.0.0.1:${await closedPort()}`;
    const r = await sluiceInProcess(['run', file, '--no-progress'], {
      env: { SLUICE_BASE_URL: url, SLUICE_API_KEY: 'k' },
    });
    expect(r.code).toBe(1);
    const f = failure(r);
    expect(f.error).toBe(`error: cannot reach ${url}: connect ECONNREFUSED ${url.slice('http://'.length)}`);
    expect(f.fix).toMatch(/^fix: .*base_url/);
  });

  it('a filter job cancelled at the 5-minute limit: the cause and what to change; a rerun does not pay again', async () => {
    // Scanning 100 records per emulated minute, the job cannot finish inside the limit (reached in 0.3 s real time).
    const slow = await emulator({ seed: 9, size: 2000, timeScale: 1000, jobRecordsPerMinute: 100 });
    try {
      const ws = workspace();
      const r = await sluiceInProcess(['run', ws.pipeline('company_profiles.yaml'), '--no-progress'], {
        service: slow,
      });
      expect(r.code).toBe(1);
      const f = failure(r);
      // `canceled` is over: said at once, not polled until the poll timeout.
      expect(f.error).toMatch(
        /^error: snapshot snap_\w+ was canceled: Job was cancelled: it exceeded the 5-minute limit$/,
      );
      expect(f.fix).toMatch(
        /^fix: the service cancels a filter job that runs longer than 5 minutes: narrow source\.filter or lower source\.records_limit .*--fresh/,
      );
      expect(slow.stats.paid.filter).toBe(1);
      // Rerunning without --fresh meets the same cancelled job, not a second paid one.
      const again = await sluiceInProcess(['run', ws.pipeline('company_profiles.yaml'), '--no-progress'], {
        service: slow,
      });
      expect(again.code).toBe(1);
      expect(failure(again)).toEqual(f);
      expect(slow.stats.paid.filter).toBe(1);
    } finally {
      await slow.close();
    }
  });
});
