/** The watchers' guard and what a finished run notifies: pure functions, no servers. */
import { describe, expect, it } from 'vitest';
import type { WorkUnit } from '../../src/core/types.js';
import { observeRun, type RunEnded, type RunObserver } from '../../src/observe/events.js';
import { endNotices, slackBody } from '../../src/observe/notify/message.js';
import { groupPath } from '../../src/observe/metrics/run-metrics.js';
import { destination, withPath } from '../../src/observe/outbound.js';
import { recordingLogger } from '../support/in-memory.js';

const totals = {
  units: { total: 2, committed: 2, skipped: 0, failed: 0 },
  records: 10,
  bytes: 100,
  retries: 0,
  deadLetters: 0,
  recordsPerSink: [{ sink: 'duckdb w.duckdb table t', records: 10 }],
  paidCalls: 1,
  recordsCharged: 10,
  paid: [{ kind: 'filter' as const, for: 'filter job', calls: 1, retried: 0, wasted: 0, records: 10, job: 's_1' }],
};
const ended = (over: Partial<RunEnded> = {}): RunEnded => ({
  run: 'r1',
  pipeline: 'p',
  outcome: 'failed',
  exitCode: 1,
  cause: 'boom',
  fix: 'do this',
  startedAt: 0,
  durationMs: 5000,
  totals,
  schemaChanges: [],
  checks: [],
  ...over,
});

describe('observeRun', () => {
  it('a watcher that throws is a warning: the others are told, the unit runs, the run goes on', async () => {
    const log = recordingLogger();
    const told: string[] = [];
    const broken: RunObserver = {
      unitCommitted: () => {
        throw new Error('watcher broke');
      },
      runEnded: async () => {
        throw new Error('report broke');
      },
    };
    const fine: RunObserver = {
      unitCommitted: (e) => void told.push(e.unit),
      unit: async (_u, work) => {
        told.push('around');
        return work();
      },
    };
    const o = observeRun([broken, fine], log);
    o.unitCommitted({ unit: 'u1', sink: 's', records: 1 });
    expect(await o.unit({ id: 'u1', params: {} } as WorkUnit, async () => 42)).toBe(42);
    await o.runEnded(ended());
    expect(told).toEqual(['u1', 'around']);
    expect(log.lines.filter((l) => l.startsWith('warn'))).toEqual([
      'warn: observing a commit: watcher broke (the run goes on)',
      'warn: reporting the run: report broke',
    ]);
  });
});

describe('end notices', () => {
  it('one notice per failure, of the kind its exit code says', () => {
    expect(endNotices(ended()).map((n) => n.event)).toEqual(['failure']);
    expect(endNotices(ended({ exitCode: 4 })).map((n) => n.event)).toEqual(['failure_budget']);
    expect(endNotices(ended({ exitCode: 6 })).map((n) => n.event)).toEqual(['checks']);
    expect(endNotices(ended({ exitCode: 5 })).map((n) => n.event)).toEqual(['failure', 'schema_change']);
    const ok = ended({
      outcome: 'succeeded',
      exitCode: 0,
      schemaChanges: [{ sink: 's', changes: [{ column: 'x', change: 'added', to: 'BIGINT' }] }],
    });
    expect(endNotices(ok).map((n) => n.event)).toEqual(['success', 'schema_change']);
  });

  it("Slack's body: the title, the fix, the changes and the run id", () => {
    const [n] = endNotices(ended());
    expect(slackBody(n!).text).toBe(':x: sluice p failed (exit 1): boom\nfix: do this\nrun `r1`');
  });
});

describe('the Pushgateway URL', () => {
  it('groups by job, pipeline and shard, in base64url so a `/` in a value stays one segment', () => {
    expect(withPath(destination('http://gw:9091/'), groupPath({ pipeline: 'p', shard: '2/4' })).url.href).toBe(
      'http://gw:9091/metrics/job@base64/c2x1aWNl/pipeline@base64/cA/shard@base64/Mi80',
    );
  });

  it('puts the push path before the query, under a path prefix, credentials as basic auth', () => {
    const gw = destination('https://ops:pa%40ss-7f3e@gw.example/prefix/?token=tok-91ac2f');
    expect(withPath(gw, groupPath({ pipeline: 'p' })).url.href).toBe(
      'https://gw.example/prefix/metrics/job@base64/c2x1aWNl/pipeline@base64/cA?token=tok-91ac2f',
    );
    expect(gw.headers.authorization).toBe(`Basic ${Buffer.from('ops:pa@ss-7f3e').toString('base64')}`);
    expect(gw.display).toBe('https://***@gw.example/prefix/?token=***');
  });
});
