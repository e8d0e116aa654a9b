/**
 * Metrics trust nothing of where they go (issue 30), against a real Pushgateway (with and without basic auth) and
 * hostile HTTP servers started here: the push path goes before the URL's query; `user:password@` is sent as basic
 * auth; a token in the URL never shows, even when the gateway echoes it; a failing destination is one warning per
 * run; a 1 GiB answer is read a few KiB deep; a gateway that never answers holds one push, and the process exits
 * within seconds of its work; two shards write textfiles of their own, through temporary names unique across hosts.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, watch, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Batch, Source } from '../../src/core/types.js';
import { createLogger } from '../../src/runtime/logger.js';
import { runPipeline } from '../../src/operations/run.js';
import { loadPipeline } from '../../src/pipeline/load.js';
import { sluice } from '../e2e/harness.js';
import { peakRss, startHostileServer, type HostileServer } from '../support/hostile-http.js';
import { startPushgateway, type Pushgateway } from '../support/pushgateway.js';
import { systemBinary } from '../support/system-packages.js';

const quiet = { fresh: false, logFormat: 'text', quiet: true, progress: false } as const;
const hasGateway = systemBinary('pushgateway') !== undefined;
const TOKEN = 'gw-token-0e5d77';
/** `gw-pass-5a1c`, hashed with bcrypt (cost 4) for the gateway's web config. */
const AUTH = {
  user: 'ops',
  password: 'gw-pass-5a1c',
  bcrypt: '$2b$04$yuAURvE/MP8aaQqitJ605OZycKMdzCuIsUq/BVM2hqGIdrR4cajha',
};
const dirs: string[] = [];

afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function workspace(metrics: string, opts: { name?: string; source?: string } = {}): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'sluice-metrics-hostile-'));
  dirs.push(dir);
  mkdirSync(path.join(dir, 'in'));
  for (let i = 0; i < 4; i++) writeFileSync(path.join(dir, `in/f${i}.jsonl`), `{"id":${i}}\n`);
  const file = path.join(dir, 'p.yaml');
  writeFileSync(
    file,
    `version: 1
name: ${opts.name ?? 'metered'}
${opts.source ?? 'source: { type: file, paths: [in], format: jsonl }'}
sink: { type: duckdb, path: out.duckdb, table: t }
metrics:
${metrics}
`,
  );
  return file;
}

function capture() {
  const lines: string[] = [];
  return { lines, log: createLogger({ format: 'text', level: 'warn', write: (l) => lines.push(l) }) };
}

/** A source whose one unit takes `ms`, so that `interval` reports happen while it runs. */
function slowSource(ms: number): Source {
  return {
    plan: async () => [{ id: 'u1', params: {} }],
    read: async function* (): AsyncIterable<Batch> {
      await new Promise((resolve) => setTimeout(resolve, ms));
      yield [{ id: 1 }];
    },
    concurrency: 1,
    incremental: false,
  };
}

describe.skipIf(!hasGateway)('a real Pushgateway', () => {
  let open: Pushgateway;
  let guarded: Pushgateway;
  beforeAll(async () => {
    [open, guarded] = await Promise.all([startPushgateway(), startPushgateway({ basicAuth: AUTH })]);
  }, 60_000);
  afterAll(() => {
    open?.stop();
    guarded?.stop();
  });

  it('a URL with a query: the push goes to the group path, the query after it', async () => {
    const file = workspace('  pushgateway: ${PUSHGATEWAY_URL}', { name: 'queried' });
    const { lines, log } = capture();
    await runPipeline(await loadPipeline(file, { PUSHGATEWAY_URL: `${open.url}/?token=${TOKEN}` }), quiet, { log });
    expect(lines).toEqual([]);
    expect(await open.scrape()).toMatch(/^sluice_run_exit_code\{[^}]*pipeline="queried"[^}]*\} 0$/m);
  }, 60_000);

  it('`user:password@` is sent as basic auth: the guarded gateway takes the push', async () => {
    const file = workspace('  pushgateway: ${PUSHGATEWAY_URL}', { name: 'guarded' });
    const { lines, log } = capture();
    const url = guarded.url.replace('http://', `http://${AUTH.user}:${AUTH.password}@`);
    await runPipeline(await loadPipeline(file, { PUSHGATEWAY_URL: url }), quiet, { log });
    expect(lines).toEqual([]);
    expect(await guarded.scrape()).toMatch(/^sluice_run_exit_code\{[^}]*pipeline="guarded"[^}]*\} 0$/m);
    // Without the credentials, the same gateway refuses: the push above did carry them.
    expect((await fetch(`${guarded.url}/metrics`)).status).toBe(401);
  }, 60_000);
});

describe('hostile gateways', () => {
  let echo: HostileServer;
  let huge: HostileServer;
  let hanging: HostileServer;
  beforeAll(async () => {
    [echo, huge, hanging] = await Promise.all([
      startHostileServer({ kind: 'echo', status: 400 }),
      startHostileServer({ kind: 'huge' }),
      startHostileServer({ kind: 'hanging' }),
    ]);
  });
  afterAll(async () => {
    for (const s of [echo, huge, hanging]) await s?.close();
  });

  it('a gateway echoing the URL in its error: the token never shows; one warning for the run', async () => {
    const file = workspace('  pushgateway: ${PUSHGATEWAY_URL}\n  interval: 300ms');
    const { lines, log } = capture();
    await runPipeline(await loadPipeline(file, { PUSHGATEWAY_URL: `${echo.url}/?token=${TOKEN}` }), quiet, {
      log,
      source: slowSource(1_000),
    });
    // Reports while the run went and at its end, all refused: told once.
    expect(echo.requests.length).toBeGreaterThanOrEqual(3);
    for (const r of echo.requests)
      expect(r.path).toMatch(/^\/metrics\/job@base64\/c2x1aWNl\/pipeline@base64\/[^?]+\?token=/);
    const warnings = lines.filter((l) => l.includes('could not report metrics'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(
      /could not report metrics to the Pushgateway http:\/\/127\.0\.0\.1:\d+\/\?token=\*\*\*: HTTP 400: no such group: \/metrics\/job@base64\/\S+\?token=\*\*\*/,
    );
    expect(lines.join('\n')).not.toContain(TOKEN);
  }, 60_000);

  it('a 1 GiB answer is read a few KiB deep: the process’s peak RSS stays small', async () => {
    const file = workspace(`  pushgateway: ${huge.url}`);
    const rss = peakRss(path.dirname(file));
    const r = await sluice(['run', file, '--no-progress'], { env: rss.env });
    expect(r.code, r.stderr).toBe(0);
    const peakMiB = rss.mib(r.stderr);
    expect(huge.requests).toHaveLength(1);
    expect(huge.bytesSent).toBeLessThan(64 * 1024 ** 2);
    expect(peakMiB).toBeLessThan(300);
  }, 120_000);

  it('a gateway that never answers, `interval: 1s`: one push out at a time, and the process exits within seconds of its work', async () => {
    // The embedded emulator answers each call after 700 ms: a few seconds of work, the CPU idle.
    const file = workspace(`  pushgateway: ${hanging.url}\n  interval: 1s`, {
      source: `service:
  base_url: emulator
  api_key: metrics-key-4c1a
  emulator: { seed: 2, size: 200, time_scale: 1000, latency_ms: 700 }
source:
  type: snapshot
  dataset_id: gd_l1vikfnt1wgvvqz95w
  filter: { name: followers, operator: '>=', value: 0 }
  records_limit: 1000
  download: { format: jsonl, compress: true, batch_size: 1000 }
  poll: { interval_ms: 20 }`,
    });
    const started = Date.now();
    const r = await sluice(['run', file, '--no-progress', '--log-format', 'json']);
    const wallMs = Date.now() - started;
    expect(r.code, r.stderr).toBe(0);
    const summary = JSON.parse(r.stdout.trim());
    expect(summary.durationMs).toBeGreaterThan(2_000);
    // One push out at a time while the run went (those due meanwhile skipped), each given up after 5 s; the last
    // one (which abandons the one still out) bounded the same: however long the run took, never a queue of them.
    expect(hanging.mostOpen).toBeLessThanOrEqual(2);
    expect(hanging.connections).toBeLessThanOrEqual(2 + Math.ceil(summary.durationMs / 5_000));
    expect(wallMs - summary.durationMs).toBeLessThan(10_000);
    const warnings = r.stderr.split('\n').filter((l) => l.includes('could not report metrics'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/the Pushgateway http:\/\/127\.0\.0\.1:\d+\/: no answer within 5000 ms/);
  }, 120_000);
});

describe('textfiles of shards', () => {
  it('two shards on one host write a textfile each, through temporary names unique across hosts', async () => {
    const file = workspace('  textfile: prom/sluice.prom');
    const dir = path.join(path.dirname(file), 'prom');
    mkdirSync(dir);
    const seen: string[] = [];
    const watcher = watch(dir, (_event, name) => name && seen.push(name));
    try {
      for (const index of [0, 1])
        await runPipeline(await loadPipeline(file, {}), { ...quiet, shard: { index, count: 2 } });
    } finally {
      watcher.close();
    }
    expect(readdirSync(dir).sort()).toEqual(['sluice.shard-0-of-2.prom', 'sluice.shard-1-of-2.prom']);
    for (const index of [0, 1]) {
      const text = readFileSync(path.join(dir, `sluice.shard-${index}-of-2.prom`), 'utf8');
      expect(text).toMatch(
        new RegExp(`^sluice_last_success_timestamp_seconds\\{[^}]*shard="${index}/2"[^}]*\\} \\d`, 'm'),
      );
      expect(text).not.toMatch(new RegExp(`shard="${1 - index}/2"`));
    }
    const host = hostname()
      .replace(/[^A-Za-z0-9.-]/g, '_')
      .replace(/\./g, '\\.');
    const temps = seen.filter((n) => n.endsWith('.tmp'));
    expect(temps.length).toBeGreaterThan(0);
    for (const t of temps)
      expect(t).toMatch(new RegExp(`^sluice\\.shard-[01]-of-2\\.prom\\.${host}\\.${process.pid}\\.[0-9a-f]{8}\\.tmp$`));
  }, 60_000);
});
