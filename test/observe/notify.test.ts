/**
 * `notify:` end to end, with a real webhook receiver (node http on 127.0.0.1) and real runs in-process: a failing
 * run posts exactly one notification whose body tells the exit code, cause, fix and run id; an undeliverable
 * webhook changes neither the exit code nor the data; a stall is told once; a 5xx is tried again, a 4xx is not.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { SluiceError } from '../../src/core/errors.js';
import type { Batch, Source, WorkUnit } from '../../src/core/types.js';
import { runPipeline } from '../../src/operations/run.js';
import { readRunHistory } from '../../src/state/run-history.js';
import { createLogger } from '../../src/runtime/logger.js';
import { deliver } from '../../src/observe/notify/deliver.js';
import { destination } from '../../src/observe/outbound.js';
import { loadPipeline } from '../../src/pipeline/load.js';
import { startHostileServer } from '../support/hostile-http.js';
import { closedUrl, startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

const quiet = { fresh: false, logFormat: 'text', quiet: true, progress: false } as const;
let hook: WebhookReceiver;
const dirs: string[] = [];

beforeAll(async () => void (hook = await startWebhookReceiver()));
beforeEach(() => void hook.received.splice(0));
afterAll(async () => {
  await hook?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A workspace with two input files, one of them holding a line that is not JSON. */
function workspace(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'sluice-notify-'));
  dirs.push(dir);
  mkdirSync(path.join(dir, 'in'));
  writeFileSync(path.join(dir, 'in/a.jsonl'), '{"id":1}\n{"id":2}\n');
  writeFileSync(path.join(dir, 'in/b.jsonl'), '{"id":3}\n{broken\n');
  return dir;
}

function pipelineFile(dir: string, body: string): string {
  const file = path.join(dir, 'p.yaml');
  writeFileSync(
    file,
    `version: 1
name: alerts
source: { type: file, paths: [in], format: jsonl, concurrency: 1 }
${body}`,
  );
  return file;
}

async function tableCount(file: string): Promise<number> {
  const db = await DuckDBInstance.create(file);
  const conn = await db.connect();
  try {
    return Number((await conn.runAndReadAll('SELECT count(*) AS n FROM t')).getRowObjectsJson()[0]!.n);
  } finally {
    conn.closeSync();
    db.closeSync();
  }
}

const env = (url: string) => ({ HOOK_URL: url, HOOK_TOKEN: 'bearer-canary-31c9' });
const notify = (extra = '') => `notify:
  webhooks:
    - { url: "\${HOOK_URL}", headers: { Authorization: "Bearer \${HOOK_TOKEN}" }${extra} }
  timeout: 2s
  retries: 1
`;

describe('notifications', () => {
  it('a failing run posts one webhook: exit code, cause, fix and the run id of runs.jsonl', async () => {
    const dir = workspace();
    // The sink's path is a directory: the run fails when it opens the sink (exit 1).
    mkdirSync(path.join(dir, 'not-a-file.duckdb'));
    const file = pipelineFile(dir, `sink: { type: duckdb, path: not-a-file.duckdb, table: t }\n${notify()}`);
    const err = await runPipeline(await loadPipeline(file, env(hook.url)), quiet).catch((e: SluiceError) => e);
    expect(err).toBeInstanceOf(SluiceError);
    const [history] = await readRunHistory(path.join(dir, '.sluice/alerts/runs.jsonl'));
    expect(hook.received).toHaveLength(1);
    const { body, headers } = hook.received[0]!;
    expect(headers.authorization).toBe('Bearer bearer-canary-31c9');
    expect(body).toMatchObject({
      event: 'failure',
      status: 'failed',
      pipeline: 'alerts',
      run: history!.run,
      exit_code: 1,
      cause: history!.cause,
      fix: (err as SluiceError).hint,
    });
    expect(body.cause).toMatch(/not-a-file\.duckdb/);
    expect(body.title).toMatch(/^sluice alerts failed \(exit 1\): /);
  }, 60_000);

  it('an undeliverable webhook leaves the exit code and the data as they are, and its URL out of the log', async () => {
    const outcome = async (notifyBlock: string, url: string) => {
      const dir = workspace();
      const file = pipelineFile(
        dir,
        `sink: { type: duckdb, path: out.duckdb, table: t }\nmax_dead_letters: 0\n${notifyBlock}`,
      );
      const lines: string[] = [];
      const log = createLogger({ format: 'text', level: 'info', write: (l) => lines.push(l) });
      const err = await runPipeline(await loadPipeline(file, env(url)), quiet, { log }).catch((e: SluiceError) => e);
      return { exitCode: (err as SluiceError).exitCode, rows: await tableCount(path.join(dir, 'out.duckdb')), lines };
    };
    const unset = await outcome('', hook.url);
    const dead = await closedUrl();
    const undeliverable = await outcome(notify(), dead);
    expect(unset.exitCode).toBe(4);
    expect(undeliverable.exitCode).toBe(unset.exitCode);
    expect(undeliverable.rows).toBe(unset.rows);
    const warning = undeliverable.lines.find((l) => l.includes('not delivered'));
    expect(warning).toMatch(
      /notification \(failure_budget\) to notify\.webhooks\[0\] \(http:\/\/127\.0\.0\.1:\d+\/\*\*\*\) not delivered after 2 attempt\(s\): network: ECONNREFUSED$/,
    );
    expect(undeliverable.lines.join('\n')).not.toContain('undeliverable-token-77');
  }, 60_000);

  it('tells a success in Slack’s format, to a webhook that subscribed to it', async () => {
    const dir = workspace();
    const file = pipelineFile(
      dir,
      `sink: { type: duckdb, path: out.duckdb, table: t }\nmax_dead_letters: 5\n${notify(', format: slack, on: [success, failure_budget]')}`,
    );
    const summary = await runPipeline(await loadPipeline(file, env(hook.url)), quiet);
    expect(hook.received).toHaveLength(1);
    const text: string = hook.received[0]!.body.text;
    expect(text).toMatch(/^:white_check_mark: sluice alerts succeeded: 3 records/);
    expect(text).toContain(`run \`${summary.run}\``);
  }, 60_000);

  it('Slack’s icon follows the severity: warn checks on a run that succeeded are a warning, a failure an error', async () => {
    const dir = workspace();
    const checks = (severity: string): string =>
      `sink: { type: duckdb, path: out.duckdb, table: t, checks: [{ type: row_count, scope: run, min: 100, severity: ${severity} }] }\nmax_dead_letters: 5\n${notify(', format: slack, on: [checks, failure, success]')}`;
    await runPipeline(await loadPipeline(pipelineFile(dir, checks('warn')), env(hook.url)), quiet);
    const warned = hook.received.map((r) => r.body.text as string);
    expect(warned).toHaveLength(2);
    expect(warned[0]).toMatch(/^:warning: sluice alerts: 1 check\(s\) warned\n/);
    expect(warned[1]).toMatch(/^:white_check_mark: sluice alerts succeeded/);

    hook.received.splice(0);
    const failed = await runPipeline(
      await loadPipeline(pipelineFile(dir, checks('error')), env(hook.url)),
      quiet,
    ).catch((e: unknown) => e as SluiceError);
    expect((failed as SluiceError).exitCode).toBe(6);
    expect(hook.received).toHaveLength(1);
    expect(hook.received[0]!.body.text).toMatch(/^:x: sluice alerts failed \(exit 6\)/);
  }, 60_000);

  it('a stall is told once, while the run goes on', async () => {
    const dir = workspace();
    const file = pipelineFile(
      dir,
      `sink: { type: duckdb, path: out.duckdb, table: t }\nnotify:\n  webhooks: [{ url: "\${HOOK_URL}", on: [stall] }]\n  stall_after: 100ms\n`,
    );
    const stalled = (): Promise<unknown> => hook.waitFor((r) => r.body.event === 'stall');
    // The second unit's read waits for the stall alert, then lets several more `stall_after` periods pass without
    // a commit (the time passing is the condition under test), before it yields its rows.
    const source: Source = {
      incremental: false,
      plan: async () => [
        { id: 'u1', params: {} },
        { id: 'u2', params: {} },
      ],
      read: async function* (unit: WorkUnit): AsyncIterable<Batch> {
        if (unit.id === 'u2') {
          await stalled();
          await new Promise((resolve) => setTimeout(resolve, 400));
        }
        yield [{ id: unit.id }];
      },
      concurrency: 1,
    };
    const summary = await runPipeline(await loadPipeline(file, env(hook.url)), quiet, { source });
    expect(summary.units.done).toBe(2);
    const stalls = hook.received.filter((r) => r.body.event === 'stall');
    expect(stalls).toHaveLength(1);
    expect(stalls[0]!.body).toMatchObject({
      status: 'running',
      run: summary.run,
      title: expect.stringMatching(/stalled: no unit committed for 100ms/),
    });
  }, 60_000);

  it('delivery tries a 5xx again and gives up on a 4xx at once', async () => {
    const to = destination(hook.url, { secretPath: true });
    hook.answer(503);
    expect(await deliver({ to, body: { n: 1 } }, { timeoutMs: 2000, retries: 2, baseDelayMs: 10 })).toBeUndefined();
    expect(hook.received.map((r) => r.body)).toEqual([{ n: 1 }]);
    hook.answer(400, 200);
    expect(await deliver({ to, body: { n: 2 } }, { timeoutMs: 2000, retries: 2, baseDelayMs: 10 })).toBe(
      'not delivered after 1 attempt(s): HTTP 400: no',
    );
  });

  it('a receiver that never answers costs each attempt its timeout, then a warning', async () => {
    const hanging = await startHostileServer({ kind: 'hanging' });
    const started = Date.now();
    const failure = await deliver(
      { to: destination(`${hanging.url}/hook`), body: { n: 1 } },
      { timeoutMs: 500, retries: 1, baseDelayMs: 10 },
    );
    expect(failure).toBe('not delivered after 2 attempt(s): network: no answer within 500 ms');
    expect(Date.now() - started).toBeLessThan(5_000);
    await hanging.close();
  });
});
