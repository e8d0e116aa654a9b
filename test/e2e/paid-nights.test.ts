/**
 * What each night paid, told once and the same everywhere: one pipeline per source kind — a snapshot into DuckDB, a
 * deep lookup into Parquet, a SERP crawl into Postgres, reviews of the places a map search finds into JSONL — over
 * emulated nights (the emulator's clock moved a day between them), each with a JSON webhook and a metrics textfile.
 *
 * - Night by night, the run's ledger of paid work (runs.jsonl: every attempt's lines, a killed attempt's on the line
 *   that marks it crashed) counts exactly what the emulator billed: filter jobs and the records they were charged,
 *   deep lookup triggers and enrichments (their matched records as the service reports them), every `POST /request`
 *   page. Killed nights (kill -9 at a failpoint, then the resume) included: a filter job whose answer was lost with
 *   the process, a crawl page paid again (counted as retried), paid work done before a kill reported once.
 * - Each night's last attempt tells the same figures in runs.jsonl, `sluice runs --json` (and its table's PAID
 *   column), the JSON summary, the webhook body and the metrics textfile.
 * - The places a search found are kept: only the first night pays for the searches, the others for review pages.
 *
 * `npm test` plays two nights with one kill (the SERP crawl's, mid-page); SLUICE_LEDGER_NIGHTS=full (CI, `.ci/run`)
 * five nights with every source kind killed on the third.
 */
import { cpSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runKilledAt } from '../../bench/lib/sluice-child.js';
import { runCli } from '../../src/cli/cli.js';
import { PAID_KINDS, type PaidKind } from '../../src/core/paid-work.js';
import { PLACE_REVIEWS_ID } from '../../src/emulator/data/datasets-catalogue.js';
import { queryPlan } from '../../src/emulator/data/deep-lookup.js';
import { mapsPlaceFids } from '../../src/emulator/data/serp-maps.js';
import { startEmulator, type EmulatorHandle } from '../../src/emulator/server.js';
import { readRunHistory, runHistoryFile, type RunRecord } from '../../src/state/run-history.js';
import { removeAfterFile } from '../support/file-cleanup.js';
import { startPostgres, type PostgresServer } from '../support/postgres-server.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';
import { memoryIo } from '../cli/memory-io.js';
import { emulatorBill, moveClock, type EmulatorBill } from './harness.js';

const FULL = process.env.SLUICE_LEDGER_NIGHTS === 'full';
const NIGHTS = FULL ? 5 : 2;
const KEY = 'paid-nights-key-3b81';
const SEED = 1;
const DAY = 86_400_000;
/** Half past an hour: records and reviews appear on whole hours, none while a night's runs go on. */
const NIGHT_1 = Date.parse('2025-03-01T02:30:00Z');

type Kind = 'snapshot' | 'deep_lookup' | 'serp' | 'reviews';
const KINDS: readonly Kind[] = ['snapshot', 'deep_lookup', 'serp', 'reviews'];

/**
 * Where each kind's run is killed with -9, and on which night: every kind on the third night in CI, the SERP crawl
 * on the second in the default suite. Crawls read one page at a time, so no page is in flight at the kill.
 */
const KILLS: Partial<Record<Kind, { night: number; failpoint: string; why: string }>> = {
  serp: {
    night: FULL ? 3 : 2,
    failpoint: 'crawl:successor-recorded',
    why: 'a page paid and its successor checkpointed, its rows not committed: the resume pays for it again',
  },
  ...(FULL && {
    snapshot: {
      night: 3,
      failpoint: 'snapshot:job-started',
      why: 'the filter job started, its id not yet checkpointed: the resume adopts it (a lost answer)',
    },
    deep_lookup: {
      night: 3,
      failpoint: 'download:body',
      why: 'triggered and enriched, the download under way: the resume pays for nothing more',
    },
    reviews: {
      night: 3,
      failpoint: 'engine:after-commit',
      why: 'one place’s page committed: the resume reads the others',
    },
  }),
};

const LOOKUP_QUERY = 'Find all coffee roasters in Portland with more than 10 employees';
const SERP_QUERIES = ['coffee roasters portland', 'ramen berlin'];
/** Map searches that each find a few places (the emulator's data: a map search lists up to ten). */
const PLACE_QUERIES = Array.from({ length: 400 }, (_, i) => `museum of modern things ${i}`)
  .filter((q) => {
    const n = mapsPlaceFids(SEED, 'www.google.com', q).length;
    return n >= 2 && n <= 3;
  })
  .slice(0, 2);

let emu: EmulatorHandle;
let pg: PostgresServer;
let hooks: WebhookReceiver;
let root: string;
beforeAll(async () => {
  root = mkdtempSync(path.join(tmpdir(), 'sluice-paid-nights-'));
  removeAfterFile(root, 'SLUICE_E2E_KEEP');
  [emu, pg, hooks] = await Promise.all([
    startEmulator({ apiKey: KEY, seed: SEED, size: 400, timeScale: 20, jobSchedulingMs: 200, now: NIGHT_1 }),
    startPostgres(),
    startWebhookReceiver(),
  ]);
  await pg.createDatabase('paid_nights');
}, 120_000);
afterAll(async () => {
  await emu?.close();
  await hooks?.close();
  pg?.stop();
});

/** The emulator's bill as the ledger names its kinds. */
function billed(c: EmulatorBill): Record<PaidKind, number> & { records: number } {
  const bill = Object.fromEntries(PAID_KINDS.map((k) => [k, c.paid[k] ?? 0])) as Record<PaidKind, number>;
  return { ...bill, request: c.requests, records: c.records_charged };
}

function minus<T extends Record<string, number>>(a: T, b: T): T {
  return Object.fromEntries(Object.keys(a).map((k) => [k, a[k]! - b[k]!])) as T;
}

/** What some attempts' lines of the ledger add up to, by kind. */
function ledgerBill(records: readonly RunRecord[]): Record<PaidKind, number> & { records: number } {
  const bill = Object.fromEntries(PAID_KINDS.map((k) => [k, 0])) as Record<PaidKind, number>;
  let charged = 0;
  for (const r of records)
    for (const l of r.paid ?? []) {
      bill[l.kind] += l.calls;
      charged += l.records ?? 0;
    }
  return { ...bill, records: charged };
}

const sourceOf: Record<Kind, string> = {
  snapshot: `
  type: snapshot
  dataset_id: ${PLACE_REVIEWS_ID}
  filter: { name: review_id, operator: is_not_null }
  incremental: { cursor: timestamp, initial: "2025-01-01T00:00:00Z" }
  records_limit: 100000
  download: { batch_size: 1000 }
  poll: { interval_ms: 20 }`,
  deep_lookup: `
  type: deep_lookup
  query: ${LOOKUP_QUERY}
  result_limit: 6
  max_cost: $20.00
  enrich:
    - { column_name: ceo_name, query: Who is the CEO? }
  download: { format: json }
  poll: { interval_ms: 50 }`,
  serp: `
  type: serp
  zone: serp_zone
  queries: ${JSON.stringify(SERP_QUERIES)}
  max_pages: 2
  concurrency: 1`,
  reviews: `
  type: reviews
  zone: serp_zone
  from_serp: { search: maps, queries: ${JSON.stringify(PLACE_QUERIES)} }
  concurrency: 1`,
};

const sinkOf = (kind: Kind): string =>
  ({
    snapshot: `sink: { type: duckdb, path: out.duckdb, table: reviews, write: merge, primary_key: [review_id] }`,
    deep_lookup: `sink: { type: parquet, path: out/lookup, write: append }`,
    serp: `transforms:\n  - { type: normalize, preset: serp_organic }\nsink: { type: postgres, url: '${pg.url('paid_nights')}', table: serp_organic, write: merge, primary_key: [query, link] }`,
    reviews: `transforms:\n  - { type: normalize, preset: reviews }\nsink: { type: jsonl, path: out/reviews, write: append }`,
  })[kind];

/** Each kind's pipeline directory: moved to a copy before its kill (a child cannot open a DuckDB file held here). */
const dirs = new Map<Kind, string>();
/** Each kind's metric counters as the last night left them. */
const counted = new Map<string, number>();

function pipelineFile(kind: Kind): string {
  let dir = dirs.get(kind);
  if (dir === undefined) {
    dir = path.join(root, kind);
    mkdirSync(dir, { recursive: true });
    dirs.set(kind, dir);
  }
  const file = path.join(dir, 'pipeline.yaml');
  writeFileSync(
    file,
    `version: 1
name: paid_${kind}
service:
  base_url: \${SLUICE_BASE_URL}
  api_key: \${SLUICE_API_KEY}
  retry: { retries: 2, base_delay_ms: 10, max_delay_ms: 50 }
notify:
  webhooks:
    - { url: '${hooks.url}', format: json, on: [success, failure] }
metrics:
  textfile: paid.prom
source:${sourceOf[kind]}
${sinkOf(kind)}
`,
  );
  return file;
}

function relocate(kind: Kind): void {
  const from = dirs.get(kind)!;
  const to = `${from}-${Date.now()}`;
  cpSync(from, to, { recursive: true, preserveTimestamps: true });
  dirs.set(kind, to);
}

const ENV = (): Record<string, string> => ({ SLUICE_BASE_URL: emu.url, SLUICE_API_KEY: KEY });

async function cli(args: string[]): Promise<{ code: number; stdout: string[]; stderr: string }> {
  const io = memoryIo(ENV());
  const code = await runCli(args, io);
  return { code, stdout: io.stdout, stderr: io.stderr.join('\n') };
}

async function history(kind: Kind): Promise<RunRecord[]> {
  return readRunHistory(runHistoryFile(path.join(dirs.get(kind)!, '.sluice', `paid_${kind}`)));
}

interface NightFigure {
  night: number;
  kind: Kind;
  paid: string;
  killed?: string;
}

/** One night of one pipeline: its kill and resume if it has one, then what it paid, from every side. */
async function playNight(kind: Kind, night: number): Promise<NightFigure> {
  const label = `night ${night} ${kind}`;
  const kill = KILLS[kind]?.night === night ? KILLS[kind] : undefined;
  if (kill) relocate(kind);
  const file = pipelineFile(kind);
  const before = billed(await emulatorBill(emu));
  const known = new Set((await history(kind)).map((r) => `${r.run}#${r.attempt}`));

  if (kill) {
    const killed = await runKilledAt(file, kill.failpoint, ENV());
    expect(killed.died, `${label}: ${killed.endedAs}\n${killed.stderr}`).toBe(true);
  }
  const run = await cli(['run', file, '--no-progress', '--log-format', 'json']);
  expect(run.code, `${label}\n${run.stderr}`).toBe(0);
  const summary = JSON.parse(run.stdout.at(-1)!) as Record<string, any>;

  // Night by night, the ledger's count of each billable call is the emulator's.
  const after = billed(await emulatorBill(emu));
  const attempts = (await history(kind)).filter((r) => !known.has(`${r.run}#${r.attempt}`));
  const { records: emuRecords, ...emuCalls } = minus(after, before);
  const { records: ledgerRecords, ...ledgerCalls } = ledgerBill(attempts);
  expect(ledgerCalls, `${label}: billed calls by kind`).toEqual(emuCalls);
  if (kind === 'deep_lookup') {
    // The emulator charges a lookup by the records it matched: its own figure, as its API reports it.
    const job = attempts.flatMap((r) => r.paidJobs ?? []).at(-1)!;
    const status = (await (
      await fetch(`${emu.url}/datasets/deep_lookup/v1/request/${job.id}/status`, {
        headers: { authorization: `Bearer ${KEY}` },
      })
    ).json()) as { matched_records: number };
    expect(ledgerRecords, `${label}: records charged`).toBe(status.matched_records);
    expect(ledgerRecords).toBeGreaterThan(0);
  } else expect(ledgerRecords, `${label}: records charged`).toBe(emuRecords);

  if (kill) {
    // The killed attempt's calls are on its crashed line, counted once; the resume's on its own.
    const [crashed, resumed] = attempts;
    expect(
      attempts.map((r) => r.status),
      label,
    ).toEqual(['crashed', 'succeeded']);
    expect(resumed!.run).toBe(crashed!.run);
    if (kind === 'serp') {
      expect(crashed!.paidCalls, label).toBe(1);
      expect(resumed!.paid?.find((l) => l.for === 'search page')?.retried, label).toBe(1);
    }
    if (kind === 'snapshot') expect(crashed!.paidCalls, `${label}: the answer died with the process`).toBe(0);
    if (kind === 'deep_lookup') {
      expect(crashed!.paid?.map((l) => [l.kind, l.calls])).toEqual([
        ['trigger', 1],
        ['enrich', 1],
      ]);
      expect(resumed!.paidCalls).toBe(0);
    }
  } else
    expect(
      attempts.map((r) => r.status),
      label,
    ).toEqual(['succeeded']);

  // The last attempt's figures, the same everywhere.
  const last = attempts.at(-1)!;
  const figures = { paidCalls: last.paidCalls, recordsCharged: last.recordsCharged, paid: last.paid };
  expect(figures.paidCalls, label).toBeTypeOf('number');
  expect({ paidCalls: summary.paidCalls, recordsCharged: summary.recordsCharged, paid: summary.paid }).toEqual(figures);
  const listed = await cli(['runs', file, '--json', '--limit', '1']);
  const line = JSON.parse(listed.stdout[0]!) as RunRecord;
  expect({ paidCalls: line.paidCalls, recordsCharged: line.recordsCharged, paid: line.paid }).toEqual(figures);
  const table = (await cli(['runs', file, '--limit', '1'])).stdout.join('\n');
  const cell = `${figures.paidCalls} call${figures.paidCalls === 1 ? '' : 's'}`;
  expect(table.split('\n')[1], label).toContain(
    figures.recordsCharged! > 0 ? `${cell}, ${figures.recordsCharged!.toLocaleString('en-US')} rec` : cell,
  );
  const hook = await hooks.waitFor((r) => r.body?.run === last.run && r.body?.event === 'success');
  expect({
    paidCalls: hook.body.paid_calls,
    recordsCharged: hook.body.records_charged,
    paid: hook.body.paid,
  }).toEqual(figures);
  hooks.received.splice(hooks.received.indexOf(hook), 1);
  // The metrics are counters across nights: a night's increase is its attempts' figures. A SIGKILL may take the
  // counts of the killed attempt's last moments with it (saved after each commit), never the resume's.
  const textfile = readFileSync(path.join(dirs.get(kind)!, 'paid.prom'), 'utf8');
  for (const [name, field] of [
    ['sluice_paid_calls_total', 'paidCalls'],
    ['sluice_records_charged_total', 'recordsCharged'],
  ] as const) {
    const metric = new RegExp(`^${name}\\{pipeline="paid_${kind}"[^}]*\\} (\\d+)$`, 'm').exec(textfile);
    const total = Number(metric?.[1]);
    const key = `${kind} ${name}`;
    const increase = total - (counted.get(key) ?? 0);
    counted.set(key, total);
    const all = attempts.reduce((n, r) => n + (r[field] ?? 0), 0);
    if (kill) {
      expect(increase, `${label}: ${name}`).toBeGreaterThanOrEqual(last[field] ?? 0);
      expect(increase, `${label}: ${name}`).toBeLessThanOrEqual(all);
    } else expect(increase, `${label}: ${name}`).toBe(all);
  }

  // The places a search found are kept: the searches are paid on the first night only.
  if (kind === 'reviews') {
    const searches = attempts.flatMap((r) => r.paid ?? []).filter((l) => l.for.startsWith('from_serp'));
    const paidSearches = searches.reduce((n, l) => n + l.calls, 0);
    expect(paidSearches, `${label}: from_serp searches`).toBe(night === 1 ? PLACE_QUERIES.length : 0);
  }

  const total = minus(after, before);
  return {
    night,
    kind,
    paid: Object.entries(total)
      .filter(([, n]) => n > 0)
      .map(([k, n]) => `${n} ${k}`)
      .join(', '),
    ...(kill && { killed: `${kill.failpoint} (${kill.why})` }),
  };
}

describe(`what ${NIGHTS} emulated nights paid, per source kind: the ledger, the emulator and every report agree`, () => {
  it('night by night, killed nights included', { timeout: FULL ? 900_000 : 240_000 }, async () => {
    expect(PLACE_QUERIES).toHaveLength(2);
    expect(queryPlan(SEED, LOOKUP_QUERY).available).toBeGreaterThan(0);
    const figures: NightFigure[] = [];
    for (let night = 1; night <= NIGHTS; night++) {
      await moveClock(emu, NIGHT_1 + (night - 1) * DAY);
      for (const kind of KINDS) figures.push(await playNight(kind, night));
    }
    console.log(
      'paid, as the emulator billed it and the ledger counted it:\n' +
        figures
          .map(
            (f) => `  night ${f.night} ${f.kind}: ${f.paid || 'nothing'}${f.killed ? `; killed at ${f.killed}` : ''}`,
          )
          .join('\n'),
    );
  });
});
