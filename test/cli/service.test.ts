import { mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/cli.js';
import { startEmulator } from '../../src/emulator/server.js';
import { memoryIo } from './memory-io.js';

const SECRET = 'cli-test-secret-key-7731';

describe('zones commands through the client', () => {
  it('`--base-url emulator` answers offline, as JSON on stdout', async () => {
    const io = memoryIo({});
    expect(await runCli(['zones', 'active', '--base-url', 'emulator'], io)).toBe(0);
    const zones = JSON.parse(io.stdout.join('\n')) as { name: string; type: string }[];
    expect(zones.length).toBeGreaterThan(0);
    expect(zones[0]).toEqual({ name: expect.any(String), type: expect.any(String) });

    const countries = memoryIo({});
    expect(await runCli(['zones', 'countries', '--base-url', 'emulator'], countries)).toBe(0);
    expect(Object.keys(JSON.parse(countries.stdout.join('\n')).zone_types)).toContain('DC_shared');
  });

  it('changes the account with --yes, reaching the service once', async () => {
    const emulator = await startEmulator({ apiKey: SECRET });
    try {
      const env = { SLUICE_BASE_URL: emulator.url, SLUICE_API_KEY: SECRET };
      const io = memoryIo(env);
      expect(await runCli(['zones', 'create', 'cli_zone', '--yes'], io)).toBe(0);
      expect(emulator.stats.paid.zone_create).toBe(1);
      const active = memoryIo(env);
      await runCli(['zones', 'active'], active);
      expect(JSON.parse(active.stdout.join('\n'))).toContainEqual({ name: 'cli_zone', type: 'serp' });
      // Without --yes nothing reaches the service.
      await runCli(['zones', 'create', 'cli_zone2'], memoryIo(env));
      expect(emulator.stats.paid.zone_create).toBe(1);
    } finally {
      await emulator.close();
    }
  });

  it('never prints the API key, also when the service refuses it', async () => {
    const emulator = await startEmulator({ apiKey: 'the-right-key-0000' });
    try {
      const io = memoryIo({ SLUICE_BASE_URL: emulator.url, SLUICE_API_KEY: SECRET });
      expect(await runCli(['zones', 'active', '--debug'], io)).toBe(2);
      expect(io.stderr[0]).toMatch(/^error: .*401/);
      expect([...io.stdout, ...io.stderr].join('\n')).not.toContain(SECRET);
    } finally {
      await emulator.close();
    }
  });
});

describe('datasets commands through the client', () => {
  it('filters (paid, with --yes), follows the snapshot and streams a part to a file', async () => {
    const emulator = await startEmulator({ apiKey: SECRET, timeScale: 1000, size: 3000 });
    try {
      const env = { SLUICE_BASE_URL: emulator.url, SLUICE_API_KEY: SECRET };
      const json = async (args: string[]): Promise<any> => {
        const io = memoryIo(env);
        expect(await runCli(args, io), io.stderr.join('\n')).toBe(0);
        return JSON.parse(io.stdout.join('\n'));
      };
      const list = (await json(['datasets', 'list'])) as { id: string }[];
      const dataset = list[0]!.id;
      const filter = '{"name":"followers","operator":">","value":0}';
      const { snapshot_id } = (await json([
        'datasets',
        'filter',
        dataset,
        '--filter',
        filter,
        '--records-limit',
        '2000',
        '--yes',
      ])) as {
        snapshot_id: string;
      };
      expect(emulator.stats.paid.filter).toBe(1);
      let meta = (await json(['datasets', 'snapshot', snapshot_id])) as { status: string; dataset_size?: number };
      // Bounded by the machine's load, not by a count of polls: a loaded machine is slow, not wrong.
      for (const deadline = Date.now() + 30_000; meta.status !== 'ready' && Date.now() < deadline;) {
        await new Promise((r) => setTimeout(r, 20));
        meta = await json(['datasets', 'snapshot', snapshot_id]);
      }
      expect(meta.status).toBe('ready');
      expect(await json(['datasets', 'parts', snapshot_id, '--batch-size', '1000'])).toEqual({ parts: 2 });

      const out = path.join(mkdtempSync(path.join(tmpdir(), 'sluice-dl-')), 'part2.jsonl.gz');
      const args = [
        'datasets',
        'download',
        snapshot_id,
        '--out',
        out,
        '--compress',
        '--batch-size',
        '1000',
        '--part',
        '2',
      ];
      const result = (await json(args)) as { out: string; bytes: number };
      expect(result.out).toBe(out);
      const lines = gunzipSync(readFileSync(out)).toString('utf8').trim().split('\n');
      expect(lines).toHaveLength(1000);
      expect(result.bytes).toBe(readFileSync(out).length);
      expect(readdirSync(path.dirname(out))).toEqual(['part2.jsonl.gz']);
    } finally {
      await emulator.close();
    }
  });

  it('leaves no file behind when a download fails', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'sluice-dl-'));
    const io = memoryIo({});
    const args = ['datasets', 'download', 'snap_missing', '--out', path.join(dir, 'x.jsonl'), '--base-url', 'emulator'];
    expect(await runCli(args, io)).toBe(1);
    expect(io.stderr[0]).toMatch(/^error: GET \/datasets\/snapshots\/snap_missing\/download: 404/);
    expect(readdirSync(dir)).toEqual([]);
  });
});

describe('sluice emulator', () => {
  it('serves until stopped and prints where', async () => {
    const io = memoryIo({});
    const done = runCli(['emulator', '--port', '0', '--seed', '3', '--api-key', SECRET], io);
    let url: string | undefined;
    for (let i = 0; i < 200 && url === undefined; i++) {
      url = /listening on (\S+)/.exec(io.stdout.join('\n'))?.[1];
      if (url === undefined) await new Promise((r) => setTimeout(r, 10));
    }
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const ok = await fetch(`${url}/countrieslist`, { headers: { authorization: `Bearer ${SECRET}` } });
    expect(ok.status).toBe(200);
    const refused = await fetch(`${url}/countrieslist`, { headers: { authorization: 'Bearer nope' } });
    expect(refused.status).toBe(401);
    io.stop();
    expect(await done).toBe(0);
    await expect(fetch(`${url}/countrieslist`)).rejects.toThrow();
    expect(io.stdout.join('\n')).not.toContain(SECRET);
  });

  it('says what to do when the port is taken', async () => {
    const other = await startEmulator({});
    try {
      const io = memoryIo({});
      expect(await runCli(['emulator', '--port', String(other.port)], io)).toBe(1);
      expect(io.stderr).toEqual([
        `error: cannot listen on 127.0.0.1:${other.port}: the port is in use`,
        '  fix: pick another port with --port (0 takes any free one)',
      ]);
    } finally {
      await other.close();
    }
  });
});
