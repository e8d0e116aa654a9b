/**
 * The documented two-terminal workflow: `sluice emulator` in one process, `sluice run` in another pointed at it
 * with SLUICE_BASE_URL, the emulator's counters read over HTTP, and SIGTERM stopping the emulator cleanly.
 */
import { describe, expect, it } from 'vitest';
import { API_KEY, query, runOk, sluice, workspace } from './harness.js';

describe('sluice emulator as its own process', () => {
  it('serves a pipeline run from another process and stops on SIGTERM with exit 0', async () => {
    const emu = sluice(['emulator', '--port', '0', '--seed', '2', '--size', '3000', '--time-scale', '50'], {
      env: { SLUICE_API_KEY: API_KEY },
    });
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let seen = '';
        emu.child.stdout!.on('data', (s: string) => {
          seen += s;
          const m = /emulator listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(seen);
          if (m) resolve(m[1]!);
        });
        emu.child.once('exit', (code) => reject(new Error(`the emulator exited ${code} before listening`)));
      });

      const ws = workspace();
      await runOk(ws.pipeline('snapshot_to_parquet.yaml'), { url });
      const [row] = await query(
        `SELECT count(*) n, count(DISTINCT company_id) ids
         FROM read_parquet('${ws.out}/company_profiles_parquet/**/*.parquet', hive_partitioning = true)`,
      );
      const snapshots = (await (
        await fetch(`${url}/datasets/snapshots`, { headers: { authorization: `Bearer ${API_KEY}` } })
      ).json()) as { id: string; dataset_size: number }[];
      expect(snapshots).toHaveLength(1);
      expect(row).toEqual({ n: snapshots[0]!.dataset_size, ids: snapshots[0]!.dataset_size });

      const stats = (await (await fetch(`${url}/_emulator/stats`)).json()) as {
        paid: Record<string, number>;
        routes: Record<string, number>;
      };
      expect(stats.paid).toEqual({ filter: 1 });
      expect(stats.routes['GET /datasets/snapshots/:id/download']).toBe(Math.ceil(snapshots[0]!.dataset_size / 1000));
    } finally {
      emu.child.kill('SIGTERM');
    }
    const done = await emu;
    expect(done.code).toBe(0);
    expect(done.stderr).toMatch(/emulator stopped/);
  });
});
