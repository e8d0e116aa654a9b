/**
 * Hostile answers, measured: each case runs the real CLI (`node bin/sluice.js run`, under `/usr/bin/time -v`) against
 * a hostile stand-in for the service (bench/lib/hostile-service.ts, in this process), with the default limits unless
 * the case says otherwise, and prints how the run ended, its wall time and the peak RSS of the sluice process.
 *
 *   npx tsx bench/hostile-answers.ts [--only no-newline,gzip-bomb,…]
 *
 * Needs dist/ built (`npm run build`) and GNU time at /usr/bin/time.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  HOSTILE_SNAPSHOT,
  dripFeed,
  endless,
  endlessRecords,
  gzipBomb,
  recordLines,
  startHostileService,
  type HostileOptions,
  type HostileService,
  type Writer,
} from './lib/hostile-service.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const KEY = 'bench-hostile-key';
const MB = 1 << 20;

interface Case {
  name: string;
  what: string;
  service: HostileOptions;
  /** Lines under `limits:` (the defaults otherwise). */
  limits?: Record<string, unknown>;
  fastPath?: boolean;
  batchSize?: number;
  /** Send SIGTERM this long after the download started (the interrupt cases). */
  sigtermAfterMs?: number;
}

/** A body that is one line of `size` bytes (no newline until its end), then three proper records. */
function longLine(size: number): Writer {
  return async (res) => {
    const chunk = Buffer.alloc(MB, 'x');
    res.write('{"id":0,"pad":"');
    for (let sent = 0; sent < size; sent += chunk.length)
      if (!res.write(chunk)) await new Promise((r) => res.once('drain', r));
    res.write(`"}\n${recordLines(3, 1)}`);
  };
}

const CASES: Case[] = [
  {
    name: 'no-newline',
    what: 'download without a newline, endless (JS path)',
    service: { download: () => endless('', Buffer.alloc(64 * 1024, 'x')) },
    limits: { max_unit_bytes: '2GiB' },
    fastPath: false,
  },
  {
    name: 'no-newline-fast',
    what: 'download without a newline, endless (fast path)',
    service: { download: () => endless('', Buffer.alloc(64 * 1024, 'x')) },
    limits: { max_unit_bytes: '2GiB' },
  },
  {
    name: 'long-line',
    what: 'one 300 MB line, then 3 records (JS path)',
    service: { download: () => longLine(300 * MB) },
    fastPath: false,
  },
  {
    name: 'long-line-fast',
    what: 'one 300 MB line, then 3 records (fast path)',
    service: { download: () => longLine(300 * MB) },
  },
  {
    name: 'endless-json',
    what: 'endless answer to the snapshot status (preflight)',
    service: { status: endless(`{"id":"${HOSTILE_SNAPSHOT}","status":"ready","pad":"`, 'a'.repeat(64 * 1024)) },
  },
  {
    name: 'gzip-bomb',
    what: 'gzip bomb: 1 KB members of 1 MiB of `a`, endless',
    service: { download: () => gzipBomb() },
  },
  {
    name: 'more-records',
    what: 'part announced as 1,000 records (batch_size), endless records',
    service: { download: () => endlessRecords() },
    batchSize: 1000,
  },
  {
    name: 'drip-download',
    what: 'download drip-fed, 1 byte / 100 ms',
    service: { download: () => dripFeed(recordLines(3), 100) },
    limits: { unit_timeout_s: 10 },
  },
  {
    name: 'drip-json',
    what: 'status answer drip-fed, 1 byte / 100 ms',
    service: { status: dripFeed(JSON.stringify({ id: HOSTILE_SNAPSHOT, status: 'ready' }), 100) },
    limits: { call_timeout_s: 10 },
  },
  {
    name: 'sigterm-no-newline',
    what: 'SIGTERM 5 s into an endless line (JS path, default grace 25 s)',
    service: { download: () => endless('', Buffer.alloc(64 * 1024, 'x')) },
    fastPath: false,
    sigtermAfterMs: 5000,
  },
  {
    name: 'sigterm-drip',
    what: 'SIGTERM 5 s into a drip-fed download (fast path, default grace 25 s)',
    service: { download: () => dripFeed(recordLines(3), 100) },
    sigtermAfterMs: 5000,
  },
];

function pipeline(c: Case, url: string): string {
  return [
    'version: 1',
    `name: hostile_${c.name.replaceAll('-', '_')}`,
    'service:',
    `  base_url: ${url}`,
    `  api_key: ${KEY}`,
    'source:',
    '  type: snapshot',
    `  snapshot_id: ${HOSTILE_SNAPSHOT}`,
    `  download: { format: jsonl, compress: false, batch_size: ${c.batchSize ?? 10_000} }`,
    ...(c.limits ? [`limits: ${JSON.stringify(c.limits)}`] : []),
    `fast_path: ${c.fastPath ?? true}`,
    'sink: { type: jsonl, path: out }',
    '',
  ].join('\n');
}

interface Measured {
  code: number | null;
  /** The run's last `error:` line, or its outcome. */
  outcome: string;
  wallS: number;
  peakRssMb: number;
  /** From SIGTERM to exit, for the interrupt cases. */
  afterSigtermS?: number;
}

async function measure(c: Case, service: HostileService): Promise<Measured> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'sluice-hostile-'));
  try {
    const file = path.join(dir, 'p.yaml');
    writeFileSync(file, pipeline(c, service.url));
    service.options = c.service;
    service.requests.length = 0;
    const child = spawn('/usr/bin/time', ['-v', process.execPath, path.join(ROOT, 'bin/sluice.js'), 'run', file], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
    child.stdout.resume();
    const started = performance.now();
    let signalledAt: number | undefined;
    if (c.sigtermAfterMs !== undefined) {
      void service.asked(/\/download/).then(() =>
        setTimeout(() => {
          signalledAt = performance.now();
          // /usr/bin/time passes no signal on: the sluice process is its only child.
          const kids = readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8').trim().split(/\s+/);
          process.kill(Number(kids[0]), 'SIGTERM');
        }, c.sigtermAfterMs),
      );
    }
    const code = await new Promise<number | null>((resolve) => child.once('close', (k) => resolve(k)));
    const ended = performance.now();
    const rss = /Maximum resident set size \(kbytes\): (\d+)/.exec(stderr);
    const lines = stderr.split('\n').filter((l) => !/^\t|^\s*Command being timed/.test(l) && l.trim() !== '');
    const outcome =
      lines.filter((l) => l.startsWith('error: ')).at(-1) ??
      lines.filter((l) => /^interrupted|abandoning|dead-lettered|published/.test(l)).at(-1) ??
      lines.at(-1) ??
      '';
    return {
      code,
      outcome: outcome.slice(0, 220),
      wallS: (ended - started) / 1000,
      peakRssMb: rss ? Number(rss[1]) / 1024 : NaN,
      ...(signalledAt !== undefined && { afterSigtermS: (ended - signalledAt) / 1000 }),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const only = (() => {
  const i = process.argv.indexOf('--only');
  return i === -1 ? undefined : new Set(process.argv[i + 1]!.split(','));
})();

const service = await startHostileService();
try {
  for (const c of CASES.filter((x) => !only || only.has(x.name))) {
    const m = await measure(c, service);
    const sig = m.afterSigtermS !== undefined ? `, exit ${m.afterSigtermS.toFixed(1)} s after SIGTERM` : '';
    console.log(
      `${c.name.padEnd(20)} exit ${String(m.code).padEnd(4)} ${m.wallS.toFixed(1).padStart(6)} s  ` +
        `peak RSS ${m.peakRssMb.toFixed(0).padStart(5)} MB${sig}\n    ${c.what}${c.limits ? ` (limits ${JSON.stringify(c.limits)})` : ''}\n    ${m.outcome}`,
    );
  }
} finally {
  await service.close();
}
