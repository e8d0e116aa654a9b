/**
 * Hostile answers (issue 23): a service that streams without end, inflates without end, never ends a line, sends
 * more records than it announced, or drips its answer a byte at a time. Each run ends with a message naming the
 * limit it passed (`limits.*`), commits nothing of the unit, and — where one record was the problem — dead-letters
 * it with its position and commits the rest. The limits are set small here; the defaults and the peak RSS under each
 * answer are measured by bench/hostile-answers.ts.
 *
 * The download cases whose mechanism differs by path run on both: decoded in JS (`fast_path: false`), and
 * downloaded to disk for the sink's native reader (the fast path, decode/checked-bytes.ts). The gzip bomb and the
 * drip-feed are stopped by the same code on both (decode/gunzip.ts, the unit's deadline): on the fast path only,
 * unless SLUICE_HOSTILE_MATRIX=full (CI).
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  HOSTILE_SNAPSHOT,
  dripFeed,
  endless,
  endlessRecords,
  gzipBomb,
  recordLines,
  records,
  startHostileService,
  text,
  type HostileOptions,
  type HostileService,
} from '../../bench/lib/hostile-service.js';
import { KEY, cli, expectFailure, expectNothingCommitted, inventory, workspace } from './bad-input/harness.js';

let service: HostileService;
beforeAll(async () => {
  service = await startHostileService();
});
afterAll(() => service?.close());

/** Small enough to pass in a moment; the deadlines generous (a loaded machine is slow), but in their own cases. */
const LIMITS = {
  max_record_bytes: 4096,
  max_unit_bytes: '1MiB',
  max_answer_bytes: '64KiB',
  max_inflate_ratio: 50,
  unit_timeout_s: 120,
  call_timeout_s: 120,
};

function pipeline(fastPath: boolean, limits: Record<string, unknown> = {}): string {
  return [
    'version: 1',
    'name: hostile',
    'service:',
    '  base_url: ${SLUICE_BASE_URL}',
    '  api_key: ${SLUICE_API_KEY}',
    '  retry: { retries: 1, base_delay_ms: 10, max_delay_ms: 20 }',
    'source:',
    '  type: snapshot',
    `  snapshot_id: ${HOSTILE_SNAPSHOT}`,
    '  download: { format: jsonl, compress: false, batch_size: 1000 }',
    '  poll: { interval_ms: 20 }',
    `limits: ${JSON.stringify({ ...LIMITS, ...limits })}`,
    `fast_path: ${fastPath}`,
    'sink: { type: jsonl, path: out }',
    '',
  ].join('\n');
}

async function run(fastPath: boolean, limits?: Record<string, unknown>) {
  const ws = workspace();
  const file = ws.write('p.yaml', pipeline(fastPath, limits));
  const before = ws.files();
  const r = await cli(['run', file, '--no-progress'], { SLUICE_BASE_URL: service.url, SLUICE_API_KEY: KEY });
  return { ...r, ws, before, file };
}

function answering(o: HostileOptions): void {
  service.options = o;
  service.requests.length = 0;
}

const PATHS = [
  ['decoded in JS', false],
  ['on the fast path', true],
] as const;
/** For the cases whose mechanism is the same on both paths: the fast path, or both in CI. */
const SAME_ON_BOTH = process.env.SLUICE_HOSTILE_MATRIX === 'full' ? PATHS : PATHS.filter(([, fast]) => fast);

describe.each(PATHS)('a hostile download, %s', (_, fastPath) => {
  it('a body without a newline: the unit fails past max_unit_bytes, nothing committed', async () => {
    answering({ download: () => endless('', 'x'.repeat(65536)) });
    const r = await run(fastPath);
    expectFailure(
      r,
      /more than 1 MiB of data in one unit \(decompressed; limits\.max_unit_bytes\)/,
      /raise limits\.max_unit_bytes/,
    );
    await expectNothingCommitted(r.ws, r.before);
    // Not read again: the service would send the same.
    expect(service.requests.filter((p) => p.includes('/download'))).toHaveLength(1);
  });

  it('one line over max_record_bytes: dead-lettered with its offset and the limit, the records around it committed', async () => {
    const long = `{"id":0,"text":"${'x'.repeat(100_000)}"}\n`;
    answering({ download: () => text(recordLines(2) + long + recordLines(3, 3)) });
    const r = await run(fastPath);
    expect(r.code, r.stderr.join('\n')).toBe(0);
    const inv = await inventory(r.ws, r.before);
    expect(inv.deadLetters).toBe(1);
    const letter = JSON.parse(readFileSync(r.ws.path('.sluice/hostile/dead-letters.jsonl'), 'utf8').trim()) as Record<
      string,
      unknown
    >;
    expect(letter.offset).toBe(Buffer.byteLength(recordLines(2)));
    expect(letter.reason).toMatch(
      /^line \(97\.7 KiB\) is over the record size limit of 4 KiB \(limits\.max_record_bytes\)/,
    );
    expect(String(letter.raw).length).toBeLessThan(2048);
    const rows = inv.newDataFiles
      .flatMap((f) => readFileSync(r.ws.path(f), 'utf8').trim().split('\n'))
      .map((l) => (JSON.parse(l) as { id: number }).id);
    expect(rows.sort()).toEqual([1, 2, 3, 4, 5]);
  });

  it('more records than the part announced: the unit fails past batch_size plus records_margin', async () => {
    answering({ download: () => endlessRecords() });
    const r = await run(fastPath, { max_unit_bytes: '1GiB' });
    expectFailure(
      r,
      /more than 1100 records, where the download's batch_size says 1000 \(limits\.records_margin: 10% more allowed\)/,
      /raise limits\.records_margin/,
    );
    await expectNothingCommitted(r.ws, r.before);
  });
});

describe.each(SAME_ON_BOTH)('a hostile download, %s', (_, fastPath) => {
  it('a gzip bomb: the unit fails past max_inflate_ratio', async () => {
    answering({ download: () => gzipBomb() });
    const r = await run(fastPath, { max_unit_bytes: '1GiB' });
    expectFailure(
      r,
      /the gzip body inflates more than 50× \(.* compressed; limits\.max_inflate_ratio\): a gzip bomb/,
      /raise limits\.max_inflate_ratio/,
    );
    await expectNothingCommitted(r.ws, r.before);
  });

  it('a drip-fed body: the unit fails past unit_timeout_s; the next run, answered properly, commits it', async () => {
    answering({ download: () => dripFeed(recordLines(3), 20) });
    const r = await run(fastPath, { unit_timeout_s: 1 });
    expectFailure(
      r,
      /not read and committed within 1 s \(limits\.unit_timeout_s\); its reads were cancelled/,
      /raise limits\.unit_timeout_s/,
    );
    await expectNothingCommitted(r.ws, r.before);

    answering({ download: () => records(3) });
    r.ws.write('p.yaml', pipeline(fastPath));
    const again = await cli(['run', r.file, '--no-progress'], { SLUICE_BASE_URL: service.url, SLUICE_API_KEY: KEY });
    expect(again.code, again.stderr.join('\n')).toBe(0);
    expect(again.stdout.join('\n')).toMatch(/^ {2}records {6}3$/m);
  });
});

describe('a hostile answer to a JSON call', () => {
  it('an endless answer fails the call past max_answer_bytes, and is not asked again', async () => {
    answering({ status: endless(`{"id":"${HOSTILE_SNAPSHOT}","status":"ready","pad":"`, 'a'.repeat(65536)) });
    const r = await run(false);
    expectFailure(r, /the answer is larger than 64 KiB \(limits\.max_answer_bytes\)/, /raise limits\.max_answer_bytes/);
    expect(service.requests.filter((p) => p === `/datasets/snapshots/${HOSTILE_SNAPSHOT}`)).toHaveLength(1);
    await expectNothingCommitted(r.ws, r.before);
  });

  it('a drip-fed answer fails the call past call_timeout_s', async () => {
    answering({ status: dripFeed(JSON.stringify({ id: HOSTILE_SNAPSHOT, status: 'ready' }), 20) });
    const r = await run(false, { call_timeout_s: 0.5 });
    expectFailure(r, /no complete answer within 0\.5 s \(limits\.call_timeout_s\)/, /raise limits\.call_timeout_s/);
    await expectNothingCommitted(r.ws, r.before);
  });

  it('an endless error body is read no further than its message', async () => {
    answering({ statusCode: 400, status: endless('{"error":"bad snapshot"', ' '.repeat(65536)) });
    const r = await run(false);
    expectFailure(r, /GET \/datasets\/snapshots\/snap_hostile1: 400: \{"error":"bad snapshot"/, /\S/);
    await expectNothingCommitted(r.ws, r.before);
  });
});
