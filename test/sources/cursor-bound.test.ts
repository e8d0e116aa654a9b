/**
 * Cursors that cannot be poisoned: a record dated `9999-12-31T23:59:59Z` among a night's snapshot is loaded, a
 * warning names its part and value, the run history keeps the warning, and the next night still loads the records
 * added since — where taking it as the cursor would filter `timestamp > 9999-…` and load nothing, for ever. A record
 * dated off the calendar is no cursor value at all, and one dated with an offset is taken as UTC. These records reach
 * sluice through a proxy in front of a real emulator, which adds them to every download.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/cli.js';
import type { Row } from '../../src/core/types.js';
import { startEmulator, type EmulatorHandle } from '../../src/emulator/server.js';
import type { RunRecord } from '../../src/state/run-history.js';
import { reviewsIncremental } from '../../src/sources/crawl/review-pages.js';
import { CursorBound, DEFAULT_MAX_AHEAD_S } from '../../src/sources/cursor-bound.js';
import { lastCursorValue } from '../../src/sources/snapshot.js';
import { memoryIo } from '../cli/memory-io.js';
import { query } from '../sinks/helpers.js';
import { sourceContext } from './crawl-harness.js';

const KEY = 'emulator-key';
const DAY = 86_400_000;
const NIGHT_1 = Date.parse('2025-03-01T02:30:00Z');
const POISON = '9999-12-31T23:59:59Z';
/** Not on the calendar: Date.parse reads it as March 2nd, within a day of the night's start, so it was taken. */
const FEB_30 = '2025-02-30T00:00:00Z';
/** The night's start, written with an offset: the cursor holds it as UTC. */
const AT_START_PLUS_2 = '2025-03-01T04:30:00+02:00';

describe('a cursor bound', () => {
  const at = (iso: string) => ({ now: () => Date.parse(iso) });

  it('takes dates up to the run’s start plus the tolerance, and any value that is not a date', () => {
    const bound = new CursorBound();
    bound.start(at('2025-03-01T00:00:00Z'));
    expect(DEFAULT_MAX_AHEAD_S).toBe(86_400);
    expect(bound.accepts('2025-03-01T23:59:59Z', {})).toBe(true);
    expect(bound.accepts('2025-03-02T00:00:00Z', {})).toBe(true);
    expect(bound.accepts('2025-03-02T00:00:01Z', {})).toBe(false);
    expect(bound.accepts(POISON, {})).toBe(false);
    expect(bound.accepts(99_999_999_999, {})).toBe(true);
    expect(bound.accepts('zzz', {})).toBe(true);
    const strict = new CursorBound(0);
    strict.start(at('2025-03-01T00:00:00Z'));
    expect(strict.accepts('2025-03-01T00:00:01Z', {})).toBe(false);
  });

  it('a committed checkpoint from the future is no lower bound', () => {
    const bound = new CursorBound();
    bound.start(at('2025-03-01T00:00:00Z'));
    const cps = new Map<string, unknown>([
      ['a', { cursor: 'timestamp', max: '2025-02-28T10:00:00Z' }],
      ['b', { cursor: 'timestamp', max: POISON }],
    ]);
    expect(lastCursorValue(cps, 'timestamp', (v) => bound.accepts(v, {}))).toBe('2025-02-28T10:00:00.000Z');
  });

  it('a review dated in the future is loaded but never becomes the place’s newest date', async () => {
    const fid = '0x1:0x2';
    const noLog = { deps: { log: { debug() {}, info() {}, warn() {}, error() {} } }, baseDir: '' };
    const run = (checkpoints: Map<string, unknown>) =>
      sourceContext(noLog, undefined, { checkpoints, now: () => Date.parse('2025-03-10T00:00:00Z') });
    const inc = reviewsIncremental(10);
    await inc.plan([fid], run(new Map([['u', { fid, ids: ['r1'], newest: POISON }]])));
    const reviews = [
      { review_id: 'bad', date: POISON },
      { review_id: 'n1', date: '2025-03-09' },
      { review_id: 'r1', date: '2025-03-01' },
    ];
    const page = inc.page({ reviews }, { subject: fid, start: 0, page: 1 }, new Date('2025-03-10T00:00:00Z'));
    // The poisoned newest date committed before is ignored: n1 is new, not "older than 9999".
    expect((page.payload.reviews as Row[]).map((r) => r.review_id)).toEqual(['bad', 'n1']);
    expect(page.checkpoint).toMatchObject({ newest: '2025-03-09' });
    expect(page.warning).toBe(
      `reviews of ${fid} page 1: 1 record has date later than the run's start (2025-03-10T00:00:00.000Z) + 1 day(s), e.g. "${POISON}": loaded, but not taken as the cursor (a value from the future would make every later run load nothing)`,
    );
  });
});

/**
 * An HTTP proxy to `target` that adds three records to every snapshot download (plain JSONL): dated `POISON`,
 * `FEB_30` and `AT_START_PLUS_2`.
 */
async function poisoningProxy(target: string): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    const up = request(target + req.url!, { method: req.method, headers: req.headers }, (answer) => {
      const download = /\/download(\?|$)/.test(req.url!) && answer.statusCode === 200;
      if (!download) {
        res.writeHead(answer.statusCode!, answer.headers);
        answer.pipe(res);
        return;
      }
      const chunks: Buffer[] = [];
      answer.on('data', (c: Buffer) => chunks.push(c));
      answer.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const first = JSON.parse(text.slice(0, text.indexOf('\n'))) as Row;
        const extra = [
          { ...first, id: 'poisoned', timestamp: POISON },
          { ...first, id: 'feb30', timestamp: FEB_30 },
          { ...first, id: 'offset', timestamp: AT_START_PLUS_2 },
        ];
        const body = Buffer.from(`${text}${extra.map((r) => `${JSON.stringify(r)}\n`).join('')}`);
        const { 'content-length': _, 'transfer-encoding': __, ...headers } = answer.headers;
        res.writeHead(200, { ...headers, 'content-length': body.length });
        res.end(body);
      });
    });
    req.pipe(up);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, server };
}

describe('a snapshot night with a record from the future', () => {
  let emu: EmulatorHandle;
  let proxy: { url: string; server: Server };
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'sluice-poison-'));
    emu = await startEmulator({ apiKey: KEY, size: 150, timeScale: 50, jobSchedulingMs: 200, now: NIGHT_1 });
    proxy = await poisoningProxy(emu.url);
  });
  afterAll(async () => {
    await new Promise((resolve) => proxy.server.close(resolve));
    await emu.close();
  });

  async function night(at: number): Promise<{ stderr: string; rows: number }> {
    const res = await fetch(`${emu.url}/_emulator/clock`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ now: new Date(at).toISOString() }),
    });
    expect(res.status).toBe(200);
    const file = path.join(dir, 'p.yaml');
    writeFileSync(
      file,
      [
        'version: 1',
        'name: poison',
        `service: { base_url: "${proxy.url}", api_key: "\${SLUICE_API_KEY}" }`,
        'source: { type: snapshot, dataset_id: gd_l1vikfnt1wgvvqz95w, filter: { name: name, operator: is_not_null },',
        '  records_limit: 100000, incremental: { cursor: timestamp, initial: "2025-01-01T00:00:00Z" },',
        '  download: { batch_size: 1000, compress: false }, poll: { interval_ms: 20 } }',
        'sink: { type: duckdb, path: w.duckdb, table: companies, write: merge, primary_key: [id] }',
        '',
      ].join('\n'),
    );
    const io = memoryIo({ SLUICE_API_KEY: KEY });
    expect(await runCli(['run', file, '--no-progress'], io), io.stderr.join('\n')).toBe(0);
    const [{ n }] = (await query('SELECT count(*)::INT AS n FROM companies', path.join(dir, 'w.duckdb'))) as [
      { n: number },
    ];
    return { stderr: io.stderr.join('\n'), rows: n };
  }

  it('is loaded and named in a warning and in the history; the next night loads the records added since', async () => {
    const first = await night(NIGHT_1);
    expect(first.stderr).toMatch(
      new RegExp(
        `^warn: snapshot \\S+ part 1: 1 record has timestamp later than the run's start \\(.*\\) \\+ 1 day\\(s\\), e\\.g\\. "${POISON}": loaded, but not taken as the cursor`,
        'm',
      ),
    );
    const poisoned = await query(
      `SELECT count(*)::INT AS n FROM companies WHERE id = 'poisoned'`,
      path.join(dir, 'w.duckdb'),
    );
    expect(poisoned).toEqual([{ n: 1 }]);
    // A value off the calendar is loaded too, but is no cursor value at all: named, never sent in a filter.
    expect(first.stderr).toMatch(
      /^warn: snapshot \S+ part 1: 1 record has a timestamp that is not a cursor value \(the cursor holds dates and times\), e\.g\. "2025-02-30T00:00:00Z": 2025-02-30 is not a day of the calendar; loaded, but not taken as the cursor$/m,
    );
    const history = readFileSync(path.join(dir, '.sluice', 'poison', 'runs.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as RunRecord);
    expect(history.at(-1)!.warnings).toEqual([
      expect.stringContaining(`e.g. "${POISON}": loaded, but not taken`),
      expect.stringContaining(`e.g. "${FEB_30}": 2025-02-30 is not a day of the calendar`),
    ]);
    const io = memoryIo({});
    expect(await runCli(['runs', path.join(dir, 'p.yaml')], io)).toBe(0);
    expect(io.stdout.join('\n')).toMatch(/^ {4}warning: snapshot .* part 1: 1 record has timestamp later than/m);

    // The newest real value of the first night, as the one UTC text the cursor holds (the record said +02:00).
    const [{ newest }] = (await query(
      `SELECT strftime(max(timestamp::TIMESTAMPTZ AT TIME ZONE 'UTC'), '%Y-%m-%dT%H:%M:%S.%gZ') AS newest FROM companies WHERE id NOT IN ('poisoned', 'feb30')`,
      path.join(dir, 'w.duckdb'),
    )) as [{ newest: string }];
    expect(newest).toBe('2025-03-01T02:30:00.000Z');

    // Two days on: the filter starts after the newest real record, so the new ones come.
    const second = await night(NIGHT_1 + 2 * DAY);
    expect(second.stderr).not.toContain(`timestamp > "${POISON}"`);
    expect(second.stderr).not.toContain('timestamp > "2025-02-30');
    expect(second.stderr).toMatch(/^incremental: timestamp > "2025-03-01T02:30:00.000Z", the last value loaded$/m);
    expect(second.rows).toBeGreaterThan(first.rows);
  });
});
