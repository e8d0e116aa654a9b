/**
 * `sluice report`: the values the page charts are those of runs.jsonl (read back from the SVG's data attributes),
 * over a real history of runs (records, dead letters, a failed attempt, two sinks); and a hostile or odd history —
 * markup in names and causes, wrong types, missing and unknown fields, a cut line — renders as text, with gaps, and
 * loads nothing from anywhere.
 */
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/cli.js';
import { startEmulator } from '../../src/emulator/server.js';
import { toPoint } from '../../src/cli/report/series.js';
import { renderChart } from '../../src/cli/report/svg.js';
import { readRunHistory, type RunRecord } from '../../src/state/run-history.js';
import { memoryIo } from './memory-io.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** HTML attribute text back to the value it stands for. */
const unescape = (s: string): string =>
  s.replace(/&(lt|gt|quot|#39|amp);/g, (_, e: string) => ({ lt: '<', gt: '>', quot: '"', '#39': "'", amp: '&' })[e]!);

/** Every element carrying `data-series`, with its data attributes, in document order. */
function charted(html: string): { series: string; run: string; attempt: number; value: number | undefined }[] {
  return [...html.matchAll(/<(?:rect|circle|g) [^>]*data-series="([^"]*)"[^>]*>/g)].map((m) => {
    const attr = (name: string): string => unescape(new RegExp(`${name}="([^"]*)"`).exec(m[0])![1]!);
    const value = attr('data-value');
    return {
      series: unescape(m[1]!),
      run: attr('data-run'),
      attempt: Number(attr('data-attempt')),
      value: value === '' ? undefined : Number(value),
    };
  });
}

/** One series' values in run order, as the page charts them. */
function seriesValues(html: string, id: string): (number | undefined)[] {
  return charted(html)
    .filter((c) => c.series === id)
    .map((c) => c.value);
}

async function report(file: string, out: string, ...extra: string[]): Promise<string> {
  const io = memoryIo({});
  const code = await runCli(['report', file, '--out', out, ...extra], io);
  expect(code, io.stderr.join('\n')).toBe(0);
  expect(io.stdout.join('\n')).toContain(`wrote ${out}`);
  return readFileSync(out, 'utf8');
}

const lines = (n: number, from: number, bad = 0): string =>
  Array.from({ length: n }, (_, i) => JSON.stringify({ id: from + i, name: `n${from + i}` }) + '\n').join('') +
  '{"id": broken\n'.repeat(bad);

describe('sluice report over a real history', () => {
  it('charts exactly what runs.jsonl holds, attempt by attempt, and the outputs as they are', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'sluice-report-'));
    dirs.push(dir);
    mkdirSync(path.join(dir, 'in'));
    const file = path.join(dir, 'p.yaml');
    writeFileSync(
      file,
      'version: 1\nname: nightly_files\nmax_dead_letters: 1\n' +
        'source: { type: file, paths: [in], format: jsonl }\n' +
        'sinks:\n  - { type: parquet, path: out/parquet }\n  - { type: jsonl, path: out/jsonl }\n',
    );
    const run = async (): Promise<number> => runCli(['run', file, '--no-progress', '--quiet'], memoryIo({}));
    writeFileSync(path.join(dir, 'in/1.jsonl'), lines(3, 0));
    expect(await run()).toBe(0);
    writeFileSync(path.join(dir, 'in/2.jsonl'), lines(2, 3, 1));
    expect(await run()).toBe(0);
    // Two bad records: over the budget of one, so the attempt fails (exit 4) with what it read uncommitted.
    writeFileSync(path.join(dir, 'in/3.jsonl'), lines(1, 5, 2));
    expect(await run()).toBe(4);

    const html = await report(file, path.join(dir, 'report.html'));
    const history = await readRunHistory(path.join(dir, '.sluice/nightly_files/runs.jsonl'));
    expect(history.map((r) => r.status)).toEqual(['succeeded', 'succeeded', 'failed']);

    const field = (f: (r: RunRecord) => number | undefined) => history.map(f);
    expect(seriesValues(html, 'records')).toEqual(field((r) => r.records));
    expect(seriesValues(html, 'dead-letters')).toEqual(field((r) => r.deadLetters));
    expect(seriesValues(html, 'dead-letters')).toEqual([0, 1, 2]);
    expect(seriesValues(html, 'retries')).toEqual(field((r) => r.retries));
    expect(seriesValues(html, 'units-failed')).toEqual(field((r) => r.units?.failed));
    expect(seriesValues(html, 'duration')).toEqual(field((r) => Date.parse(r.endedAt!) - Date.parse(r.startedAt)));
    expect(seriesValues(html, 'paid-calls')).toEqual(field((r) => r.paidJobs?.length));
    // Every attempt records what it was charged; a file source pays for nothing: zeros, not gaps.
    expect(seriesValues(html, 'records-charged')).toEqual(field((r) => r.recordsCharged));
    expect(seriesValues(html, 'records-charged')).toEqual([0, 0, 0]);
    // Every figure runs.jsonl writes is charted under its own name: none left to "a figure this report does not
    // know"; paid jobs and records charged each on an axis of their own.
    expect(seriesValues(html, 'records-read')).toEqual(field((r) => r.recordsRead));
    expect(history.every((r) => r.recordsRead !== undefined && r.bytes !== undefined)).toBe(true);
    expect(seriesValues(html, 'bytes')).toEqual(field((r) => r.bytes));
    expect(seriesValues(html, 'units-committed')).toEqual(field((r) => r.units?.committed));
    expect(seriesValues(html, 'units-skipped')).toEqual(field((r) => r.units?.skipped));
    // runs.jsonl writes `schemaChanges` only when there were some: none is 0 for an attempt that recorded counts.
    expect(seriesValues(html, 'schema-changes')).toEqual(
      field((r) => (r.schemaChanges ?? []).reduce((n, c) => n + c.changes.length, 0)),
    );
    expect(charted(html).filter((c) => c.series.startsWith('field:'))).toEqual([]);
    expect(html).not.toContain('does not know by name');
    const seriesOf = (chart: string): string[] => {
      const svg = new RegExp(`<svg [^>]*data-chart="${chart}"[\\s\\S]*?</svg>`).exec(html)![0];
      return [...new Set([...svg.matchAll(/data-series="([^"]*)"/g)].map((m) => m[1]!))];
    };
    expect(seriesOf('paid')).toEqual(['paid-calls']);
    expect(seriesOf('charged')).toEqual(['records-charged']);
    const sinks = [...new Set(history.flatMap((r) => (r.sinks ?? []).map((s) => s.sink)))];
    expect(sinks).toHaveLength(2);
    sinks.forEach((name, i) =>
      expect(seriesValues(html, `sink:${i}`)).toEqual(
        // Newer histories give each sink's committed records; the chart shows them (series.ts `perSink`).
        field((r) => r.sinks?.find((s) => s.sink === name)?.records),
      ),
    );
    // Each point names its attempt; the strip under the axis marks the failed one.
    expect(new Set(charted(html).map((c) => `${c.run}#${c.attempt}`))).toEqual(
      new Set(history.map((r) => `${r.run}#${r.attempt}`)),
    );
    const strip = [...html.matchAll(/<svg [^>]*data-chart="records"[\s\S]*?<\/svg>/g)][0]![0];
    expect([...strip.matchAll(/data-status="(\w+)"/g)].map((m) => m[1])).toEqual(['succeeded', 'succeeded', 'failed']);
    expect(html).toContain(
      history[2]!
        .cause!.replace(/&/g, '&amp;')
        .replace(/</g, '&lt;')
        .replace(/>/g, '&gt;')
        .replace(/"/g, '&quot;')
        .replace(/'/g, '&#39;'),
    );

    // The outputs as a reader sees them now (the Parquet files published so far), and the cursor: the three files
    // every sink committed (the failed attempt committed its file before the budget was judged at the end).
    const instance = await DuckDBInstance.create(':memory:');
    const connection = await instance.connect();
    const [{ n }] = (
      await connection.runAndReadAll(`SELECT count(*)::INT AS n FROM read_parquet('${dir}/out/parquet/**/*.parquet')`)
    ).getRowObjectsJS() as [{ n: number }];
    connection.closeSync();
    expect(n).toBeGreaterThan(0);
    expect(html).toContain(`parquet ${path.join(dir, 'out/parquet')}</td><td class="n">${n}</td>`);
    expect(html).toMatch(/3 unit\(s\) committed by every sink/);
  });
});

describe('the report tells what `sluice state` and `sluice runs` tell', () => {
  it('its cursor is `sluice state --json`’s after a state set, a backfill and a state reset; each marked on the charts', async () => {
    const KEY = 'report-state-key-61c2';
    const emu = await startEmulator({ apiKey: KEY, size: 400, timeScale: 50, jobSchedulingMs: 50 });
    const dir = mkdtempSync(path.join(tmpdir(), 'sluice-report-state-'));
    dirs.push(dir);
    try {
      const file = path.join(dir, 'p.yaml');
      writeFileSync(
        file,
        [
          'version: 1',
          'name: nightly_snapshot',
          `service: { base_url: "${emu.url}", api_key: "\${SLUICE_API_KEY}" }`,
          'source:',
          '  type: snapshot',
          '  dataset_id: gd_l1vikfnt1wgvvqz95w',
          '  filter: { name: name, operator: is_not_null }',
          '  incremental: { cursor: timestamp, initial: "2025-01-01T00:00:00Z" }',
          '  records_limit: 10000',
          '  poll: { interval_ms: 20 }',
          'sink: { type: duckdb, path: w.duckdb, table: t, write: merge, primary_key: [company_id] }',
          '',
        ].join('\n'),
      );
      const env = { SLUICE_API_KEY: KEY };
      const cli = async (...args: string[]): Promise<string> => {
        const io = memoryIo(env);
        const code = await runCli(args, io);
        expect(code, [...io.stdout, ...io.stderr].join('\n')).toBe(0);
        return io.stdout.join('\n');
      };
      /** Where the next run starts, as `sluice state --json` says: the cursor, else the initial value. */
      const stateCursor = async (): Promise<unknown> => {
        const s = JSON.parse(await cli('state', file, '--json')) as { cursor?: unknown; initial?: unknown };
        return s.cursor ?? s.initial;
      };
      const reportCursor = async (): Promise<unknown> => {
        const html = await report(file, path.join(dir, 'report.html'));
        const attr = /data-cursor="([^"]*)"/.exec(html)?.[1];
        expect(attr, 'the cursor card names the cursor').toBeDefined();
        return JSON.parse(unescape(attr!));
      };

      await cli('run', file, '--no-progress', '--quiet');
      const committed = await stateCursor();
      expect(committed).not.toBe('2025-01-01T00:00:00Z');
      expect(await reportCursor()).toEqual(committed);

      const instant = (v: unknown): number => Date.parse(String(v));
      await cli('state', 'set', file, '--cursor', '2025-03-03T00:00:00Z');
      const set = await stateCursor();
      expect(instant(set)).toBe(Date.parse('2025-03-03T00:00:00Z'));
      expect(await reportCursor()).toEqual(set);

      // A backfill of a past window leaves the nightly cursor where it was.
      await cli(
        'run',
        file,
        '--from',
        '2025-01-01T00:00:00Z',
        '--to',
        '2025-02-01T00:00:00Z',
        '--no-progress',
        '--quiet',
      );
      expect(await stateCursor()).toEqual(set);
      expect(await reportCursor()).toEqual(set);

      await cli('state', 'reset', file, '--yes');
      const reset = await stateCursor();
      expect(instant(reset)).toBe(Date.parse('2025-01-01T00:00:00Z'));
      expect(await reportCursor()).toEqual(reset);
      await cli('run', file, '--no-progress', '--quiet');
      expect(await reportCursor()).toEqual(await stateCursor());

      // On every chart: the backfill's column and `B`, a dashed line where each change by hand came between runs.
      const html = readFileSync(path.join(dir, 'report.html'), 'utf8');
      const history = await readRunHistory(path.join(dir, '.sluice/nightly_snapshot/runs.jsonl'));
      expect(history.map((r) => r.kind ?? 'nightly')).toEqual(['nightly', 'backfill', 'nightly']);
      const chart = [...html.matchAll(/<svg [^>]*data-chart="records"[\s\S]*?<\/svg>/g)][0]![0];
      expect([...chart.matchAll(/data-backfill="([^"]*)"/g)].map((m) => m[1])).toEqual([history[1]!.run]);
      expect([...chart.matchAll(/data-change="([^"]*)" data-after="(\d+)"/g)].map((m) => [m[1], m[2]])).toEqual([
        ['state-set', '1'],
        ['state-reset', '2'],
      ]);
      expect(html.match(/data-chart="/g)?.length).toBe([...html.matchAll(/data-change="state-set"/g)].length - 1);
      // The table lists the changes among the attempts, newest first; and the backfill's window.
      expect([...html.matchAll(/<tr class="change-row" data-change="([^"]*)"/g)].map((m) => m[1])).toEqual([
        'state-reset',
        'state-set',
      ]);
      const window = history[1]!.window!;
      expect(Date.parse(String(window.from))).toBe(Date.parse('2025-01-01T00:00:00Z'));
      expect(html).toContain(`backfill of ${window.from} → ${window.to}`);
    } finally {
      await emu.close();
    }
  }, 120_000);
});

describe('sluice report over a hostile or unusual runs.jsonl', () => {
  const evil = '<script>alert(1)</script>';
  const base = { pipeline: 'p', resumed: false, pid: 1, host: `h${evil}` };
  const runs = [
    {
      ...base,
      run: `r1${evil}`,
      attempt: 1,
      status: 'succeeded',
      startedAt: '2026-11-01T02:30:00Z',
      endedAt: '2026-11-01T02:31:00Z',
      records: 10,
      deadLetters: 0,
      retries: 2,
      paidJobs: [{ kind: 'filter', id: 's1', recordsCharged: 10 }],
      recordsCharged: 10,
      sinks: [{ sink: `duckdb ${evil}`, committedUnits: 1 }],
    },
    // Wrong types and missing fields: gaps, not zeros and not a crash.
    {
      ...base,
      run: 'r2',
      attempt: 1,
      status: 'failed',
      cause: `boom ${evil} & "quotes"`,
      startedAt: '2026-11-02T02:30:00Z',
      records: '12',
      recordsCharged: '5',
      deadLetters: null,
      retries: Number.NaN,
    },
    // Fields a newer sluice writes: charted under their own names.
    {
      ...base,
      run: 'r3',
      attempt: 1,
      status: 'succeeded',
      startedAt: 'not a date',
      endedAt: '2026-11-03T02:31:00Z',
      records: 7,
      recordsRetried: 3,
      audit: { passed: 4, failed: 1 },
      schemaChanges: [{ sink: evil, changes: [{ column: evil, change: 'added', to: 'INT' }] }],
    },
    { ...base, run: 'r3', attempt: 2, status: 'weird<status>', startedAt: '2026-11-03T03:00:00Z' },
  ];

  it('escapes every value, charts what it can read, leaves gaps for the rest, and loads nothing', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'sluice-report-'));
    dirs.push(dir);
    const file = path.join(dir, 'p.yaml');
    writeFileSync(
      file,
      'version: 1\nname: p\nsource: { type: file, paths: [in], format: jsonl }\nsink: { type: jsonl, path: out }\n',
    );
    mkdirSync(path.join(dir, '.sluice/p'), { recursive: true });
    mkdirSync(path.join(dir, 'in'));
    writeFileSync(
      path.join(dir, '.sluice/p/runs.jsonl'),
      runs.map((r) => JSON.stringify(r)).join('\n') + '\n{"run": "cut short by a cra\n[1,2]\nnull\n',
    );
    const html = await report(file, path.join(dir, 'r.html'), '--no-outputs');

    expect(html).not.toMatch(/<script/i);
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    // Nothing to fetch: no script, no src/href, no url(); a policy that forbids it anyway.
    expect(html).not.toMatch(/\s(src|href)=|url\(|@import/i);
    expect(html).toContain(`content="default-src 'none'; style-src 'unsafe-inline'"`);

    expect(seriesValues(html, 'records')).toEqual([10, undefined, 7, undefined]);
    expect(seriesValues(html, 'retries')).toEqual([2, undefined, undefined, undefined]);
    expect(seriesValues(html, 'dead-letters')).toEqual([0, undefined, undefined, undefined]);
    expect(seriesValues(html, 'duration')).toEqual([60_000, undefined, undefined, undefined]);
    expect(seriesValues(html, 'records-charged')).toEqual([10, undefined, undefined, undefined]);
    expect(seriesValues(html, 'schema-changes')).toEqual([undefined, undefined, 1, undefined]);
    expect(seriesValues(html, 'field:recordsRetried')).toEqual([undefined, undefined, 3, undefined]);
    expect(seriesValues(html, 'field:audit.failed')).toEqual([undefined, undefined, 1, undefined]);
    expect(charted(html).find((c) => c.series === 'records')?.run).toBe(`r1${evil}`);
    expect([...html.matchAll(/data-status="([^"]*)"/g)].slice(0, 4).map((m) => m[1])).toEqual([
      'succeeded',
      'failed',
      'succeeded',
      'unknown',
    ]);
  });

  it('says there are no runs yet for a pipeline that never ran', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'sluice-report-'));
    dirs.push(dir);
    const file = path.join(dir, 'p.yaml');
    writeFileSync(
      file,
      'version: 1\nname: p\nsource: { type: file, paths: [p.yaml], format: jsonl }\nsink: { type: jsonl, path: out }\n',
    );
    const html = await report(file, path.join(dir, 'r.html'));
    expect(html).toContain('no runs recorded yet');
    expect(seriesValues(html, 'records')).toEqual([]);
  });
});

describe('the charts', () => {
  it('fit the axis to the nights when a first full load dwarfs them, drawing that value cut with its number', () => {
    const values = [22_024, 30, 31, 27, undefined, 29];
    const points = values.map((_, i) =>
      toPoint({ run: `r${i}`, attempt: 1, status: 'succeeded', startedAt: `2026-11-0${i + 1}T02:30:00Z` }),
    );
    const svg = renderChart(
      {
        id: 'records',
        title: 'Records',
        about: '',
        kind: 'bars',
        series: [{ id: 'records', label: 'records', unit: 'count', values }],
      },
      points,
    );
    // The axis ends near the nights' values, not at 22k; the cut bar keeps its true value and says it.
    const ticks = [...svg.matchAll(/class="tick"[^>]*>([^<]+)</g)].map((m) => m[1]);
    expect(ticks.at(-1)).toBe('40');
    expect(seriesValues(svg, 'records')).toEqual(values);
    expect(svg).toMatch(/<text class="cut"[^>]*>22k<\/text>/);
    // Without an outlier, the axis covers the largest value.
    const even = renderChart(
      {
        id: 'r',
        title: 'R',
        about: '',
        kind: 'bars',
        series: [{ id: 'r', label: 'r', unit: 'count', values: [30, 60, 45, 10] }],
      },
      points.slice(0, 4),
    );
    expect([...even.matchAll(/class="tick"[^>]*>([^<]+)</g)].map((m) => m[1]).at(-1)).toBe('60');
    expect(even).not.toContain('class="cut"');
  });
});

describe('the report file', () => {
  it('is readable by its owner alone (0600), as runs.jsonl it quotes is, even where a page stood open to all', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'sluice-report-mode-'));
    dirs.push(dir);
    writeFileSync(path.join(dir, 'in.jsonl'), lines(2, 0, 1));
    const file = path.join(dir, 'p.yaml');
    writeFileSync(
      file,
      'version: 1\nname: mode\nsource: { type: file, paths: [in.jsonl], format: jsonl }\nsink: { type: jsonl, path: out }\n',
    );
    expect(await runCli(['run', file, '--no-progress', '--quiet'], memoryIo({}))).toBe(0);
    const history = path.join(dir, '.sluice', 'mode', 'runs.jsonl');
    expect(statSync(history).mode & 0o777).toBe(0o600);
    const out = path.join(dir, 'report.html');
    // The umask most systems have would leave a plain write 0644; an earlier page was 0644 too.
    const umask = process.umask(0o022);
    try {
      writeFileSync(out, 'an earlier page');
      chmodSync(out, 0o644);
      const html = await report(file, out, '--no-outputs');
      expect(html).toContain('broken');
      expect(statSync(out).mode & 0o777).toBe(0o600);
    } finally {
      process.umask(umask);
    }
  });
});
