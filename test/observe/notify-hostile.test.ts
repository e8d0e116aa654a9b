/**
 * Notifications trust nothing they carry or get back (issue 30), against a real webhook receiver and hostile HTTP
 * servers started here: text from elsewhere reaches Slack escaped (no `<!channel>`, no disguised link); the JSON body
 * is redacted whole (check samples and schema changes included); `user:password@` in a webhook URL is sent as basic
 * auth; a 1 GiB answer is read a few KiB deep (the process's peak RSS stays small); a receiver that never answers
 * costs the timeout, not more (notify.test.ts).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { SluiceError } from '../../src/core/errors.js';
import type { Batch, Source } from '../../src/core/types.js';
import { runPipeline } from '../../src/operations/run.js';
import { silentLogger } from '../../src/runtime/logger.js';
import { loadPipeline } from '../../src/pipeline/load.js';
import { sluice } from '../e2e/harness.js';
import { peakRss, startHostileServer, type HostileServer } from '../support/hostile-http.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

const quiet = { fresh: false, logFormat: 'text', quiet: true, progress: false } as const;
const TOKEN = 'bearer-canary-31c9';
let hook: WebhookReceiver;
const dirs: string[] = [];

beforeAll(async () => void (hook = await startWebhookReceiver()));
beforeEach(() => void hook.received.splice(0));
afterAll(async () => {
  await hook?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function workspace(files: Record<string, string>, pipeline: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'sluice-notify-hostile-'));
  dirs.push(dir);
  mkdirSync(path.join(dir, 'in'));
  for (const [name, text] of Object.entries(files)) writeFileSync(path.join(dir, 'in', name), text);
  const file = path.join(dir, 'p.yaml');
  writeFileSync(
    file,
    `version: 1\nname: hostile\nsource: { type: file, paths: [in], format: jsonl, concurrency: 1 }\n${pipeline}`,
  );
  return file;
}

const MARKUP = '<!channel> <https://evil.example|Click here> & more';

describe('what a notification carries', () => {
  it('Slack: text from elsewhere is escaped, so a mention or a link in it is shown, not acted on', async () => {
    const file = workspace(
      {},
      `sink: { type: duckdb, path: out.duckdb, table: t }
notify:
  webhooks: [{ url: "\${HOOK_URL}", format: slack }]
`,
    );
    // A failure whose message quotes a service's answer carrying Slack markup.
    const source: Source = {
      plan: async () => [{ id: 'u1', params: {} }],
      read: async function* (): AsyncIterable<Batch> {
        yield* [];
        throw new SluiceError(`the service answered 400: ${MARKUP}`, { hint: `retry <@U123> later` });
      },
      concurrency: 1,
      incremental: false,
    };
    const err = await runPipeline(await loadPipeline(file, { HOOK_URL: hook.url }), quiet, {
      source,
      log: silentLogger,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SluiceError);
    const text: string = (await hook.waitFor(() => true)).body.text;
    expect(text).toContain('&lt;!channel&gt; &lt;https://evil.example|Click here&gt; &amp; more');
    expect(text).toContain('fix: retry &lt;@U123&gt; later');
    expect(text).not.toMatch(/<!channel>|<https:|<@U123>/);
    // sluice's own markup stays: the icon and the run id's code span.
    expect(text).toMatch(/^:x: sluice hostile failed/);
    expect(text).toMatch(/\nrun `[^`]+`$/);
  }, 60_000);

  it('JSON: the whole body is redacted, check samples and schema changes included', async () => {
    const file = workspace(
      {
        'a.jsonl': `{"id":1,"name":"ok"}\n`,
        'b.jsonl': `{"id":2,"name":"${TOKEN}","${TOKEN}":1}\n`,
      },
      `sink:
  type: duckdb
  path: out.duckdb
  table: t
  checks: [{ type: accepted_values, column: name, values: [ok], severity: warn }]
notify:
  webhooks: [{ url: "\${HOOK_URL}", headers: { Authorization: "Bearer \${HOOK_TOKEN}" }, on: [checks, schema_change] }]
`,
    );
    await runPipeline(await loadPipeline(file, { HOOK_URL: hook.url, HOOK_TOKEN: TOKEN }), quiet, {
      log: silentLogger,
    });
    const checks = await hook.waitFor((r) => r.body.event === 'checks');
    const schema = await hook.waitFor((r) => r.body.event === 'schema_change');
    expect(checks.headers.authorization).toBe(`Bearer ${TOKEN}`);
    for (const { body } of [checks, schema]) expect(JSON.stringify(body)).not.toContain(TOKEN);
    const failed = checks.body.checks.find((c: { passed: boolean }) => !c.passed);
    expect(failed.sample).toEqual([{ value: '***', count: expect.anything() }]);
    expect(schema.body.schema_changes[0].changes).toContainEqual(expect.objectContaining({ column: '***' }));
  }, 60_000);

  it('`user:password@` in a webhook URL is sent as basic auth, never dropped; with an Authorization header too it is refused', async () => {
    const url = hook.url.replace('http://', 'http://hookuser:hook-pass-8d2b@');
    const file = workspace(
      { 'a.jsonl': '{"id":1}\n' },
      `sink: { type: duckdb, path: out.duckdb, table: t }
notify:
  webhooks: [{ url: "\${HOOK_URL}", on: [success] }]
`,
    );
    await runPipeline(await loadPipeline(file, { HOOK_URL: url }), quiet, { log: silentLogger });
    const got = await hook.waitFor((r) => r.body.event === 'success');
    expect(got.headers.authorization).toBe(`Basic ${Buffer.from('hookuser:hook-pass-8d2b').toString('base64')}`);

    const both = workspace(
      {},
      `sink: { type: duckdb, path: out.duckdb, table: t }
notify:
  webhooks: [{ url: "\${HOOK_URL}", headers: { Authorization: "Bearer x" } }]
`,
    );
    const err = (await loadPipeline(both, { HOOK_URL: url }).then(
      () => undefined,
      (e: unknown) => e,
    )) as Error;
    expect(err).toBeInstanceOf(SluiceError);
    expect(err.message).toMatch(/give the credentials once/);
    expect(err.message).not.toContain('hook-pass-8d2b');
  }, 60_000);
});

describe('what a webhook answers', () => {
  let huge: HostileServer;
  beforeAll(async () => void (huge = await startHostileServer({ kind: 'huge' })));
  afterAll(async () => huge?.close());

  it('a 1 GiB answer is read a few KiB deep: the process’s peak RSS stays small', async () => {
    const file = workspace(
      { 'a.jsonl': '{"id":1}\n' },
      `sink: { type: duckdb, path: out.duckdb, table: t }
notify:
  webhooks: [{ url: "${huge.url}/hook", on: [success] }]
`,
    );
    const rss = peakRss(path.dirname(file));
    const r = await sluice(['run', file, '--no-progress'], { env: rss.env });
    expect(r.code, r.stderr).toBe(0);
    const peakMiB = rss.mib(r.stderr);
    expect(huge.requests.map((q) => q.path)).toEqual(['/hook']);
    // The server stops when the client goes: a few socket buffers, not the gigabyte.
    expect(huge.bytesSent).toBeLessThan(64 * 1024 ** 2);
    expect(peakMiB).toBeLessThan(300);
  }, 120_000);
});
