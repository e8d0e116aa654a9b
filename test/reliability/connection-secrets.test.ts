/**
 * A canary secret in every form a connection string or credential takes — a Postgres URL with `user:password@`,
 * libpq's `key=value` (bare and single-quoted with escapes), `PGPASSWORD`, a ClickHouse URL with `user:password@`,
 * `user:password@` in the service's `base_url`, an S3 secret key, a value interpolated from `${VAR}` into the wrong
 * option — searched for in every output a run leaves: stdout and stderr of `run` (text and JSON logs, the summary,
 * error and `fix:` lines, `--debug` stacks), `plan`, `schema`, `runs` (text and JSON), `state`, `dead-letters`,
 * `validate`; every file under the pipeline's directory (state, history, dead letters, JSONL and DuckDB outputs), and
 * every table of the Postgres and ClickHouse databases. Never found, whole or in part.
 *
 * In this process (canary.ts `sluice`: the output as the real process writes it), with a distinct canary per form:
 * secrets are registered process-wide, and one form's registration must not hide another's leak.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT_CODES } from '../../src/core/errors.js';
import { startEmulator, type EmulatorHandle } from '../../src/emulator/server.js';
import { startClickHouse, type ClickHouseServer } from '../support/clickhouse-server.js';
import { hasPostgres, startPostgres, type PostgresServer } from '../support/postgres-server.js';
import { startS3Server } from '../support/s3-server.js';
import { systemBinary } from '../support/system-packages.js';
import { everyFile, piecesIn, piecesOf, sluice, type Command } from './canary.js';

/**
 * The canaries: each has a core of letters and digits (never escaped, so found in any encoding of the secret) and
 * characters that connection strings must escape or quote.
 */
const CANARY = {
  url: { core: 'cnryURL7q2w9e4r1', secret: "cnryURL7q2w9e4r1 p@ss:w/rd?x#y'%" },
  kvBare: { core: 'cnryKVB3m8n1b6v5', secret: 'cnryKVB3m8n1b6v5!x=y' },
  kvQuoted: { core: 'cnryKVQ5k2j7h4g9', secret: "cnryKVQ5k2j7h4g9 it's a \\ pass" },
  pgEnv: { core: 'cnryENV8f3d6s1a4', secret: 'cnryENV8f3d6s1a4-env' },
  baseUrl: { core: 'cnryBAS2z5x8c3v6', secret: 'cnryBAS2z5x8c3v6-svc' },
  variable: { core: 'cnryVAR6l9k4j1h7', secret: 'cnryVAR6l9k4j1h7' },
  /** Under a name that says nothing of a secret: only the `${VAR}` placeholder in messages keeps it out. */
  plainVariable: { core: 'cnryPLN9b2v5c8x1', secret: 'cnryPLN9b2v5c8x1' },
  s3: { core: 'cnryS3K4p7o2i5u8', secret: 'cnryS3K4p7o2i5u8/aws+key' },
  apiKey: { core: 'cnryAPI1y4t7r2e5', secret: 'cnryAPI1y4t7r2e5-key' },
  clickhouse: { core: 'cnryCHU3w6e9r2t5', secret: "cnryCHU3w6e9r2t5 p@ss:w/rd?x#y'%&<" },
};

/** Every 8-character piece of every canary's core: a message quoting a window of raw text can hold part of one. */
const PIECES = piecesOf(...Object.values(CANARY).map(({ core }) => core));
const leaksIn = (text: string | Buffer): string[] => piecesIn(PIECES, text);

let pg: PostgresServer;
let emu: EmulatorHandle;
const dirs: string[] = [];

/** Without PostgreSQL here (named at the top of the run), the Postgres password's tests are skipped. */
const withPostgres = hasPostgres();

beforeAll(async () => {
  emu = await startEmulator({ apiKey: CANARY.apiKey.secret, seed: 5, size: 200, timeScale: 100 });
  if (!withPostgres) return;
  pg = await startPostgres();
  for (const [role, form] of [
    ['canary_url', CANARY.url],
    ['canary_kvb', CANARY.kvBare],
    ['canary_kvq', CANARY.kvQuoted],
    ['canary_env', CANARY.pgEnv],
  ] as const) {
    const literal = form.secret.replace(/'/g, "''");
    await pg.query('postgres', `CREATE ROLE ${role} LOGIN SUPERUSER PASSWORD '${literal}'`);
  }
  await pg.createDatabase('canary');
}, 120_000);

afterAll(async () => {
  await emu?.close();
  pg?.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** Every row of every table of the database, as text. */
async function databaseText(database: string): Promise<string> {
  const tables = await pg.query<{ s: string; t: string }>(
    database,
    `SELECT table_schema AS s, table_name AS t FROM information_schema.tables
     WHERE table_schema NOT IN ('pg_catalog', 'information_schema')`,
  );
  let text = '';
  for (const { s, t } of tables) {
    const rows = await pg.query<{ r: string }>(database, `SELECT x::text AS r FROM "${s}"."${t}" x`);
    text += `${s}.${t}\n${rows.map((r) => r.r).join('\n')}\n`;
  }
  return text;
}

/** A pipeline directory: p.yaml and an input with one good and one bad record (a dead letter). */
function pipelineDir(yaml: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'sluice-conn-secrets-'));
  dirs.push(dir);
  writeFileSync(path.join(dir, 'p.yaml'), yaml);
  writeFileSync(path.join(dir, 'in.jsonl'), '{"id": 1, "name": "a"}\n{"id": 2, "name": \n{"id": 3, "name": "c"}\n');
  return dir;
}

/** Every command's output and every file of `dir` (and the database): no piece of any canary. */
async function expectNoCanary(dir: string, commands: Command[], database?: string): Promise<void> {
  for (const c of commands) {
    expect(leaksIn(c.stdout), `stdout of ${c.args.join(' ')}:\n${c.stdout}`).toEqual([]);
    expect(leaksIn(c.stderr), `stderr of ${c.args.join(' ')}:\n${c.stderr}`).toEqual([]);
  }
  // The pipeline file holds the secret where the user put it: everything sluice wrote must not.
  const leaks = everyFile(dir).filter((f) => f.file !== 'p.yaml' && leaksIn(f.bytes).length > 0);
  expect(leaks.map((f) => `${f.file}: ${f.bytes.toString('utf8').slice(0, 2000)}`)).toEqual([]);
  if (database !== undefined) expect(leaksIn(await databaseText(database))).toEqual([]);
}

/** `file` source → Postgres (with `url`), JSONL and DuckDB: every command that prints something about it. */
async function postgresCommands(url: (db: string) => string, env: Record<string, string> = {}): Promise<void> {
  const sinks = (u: string): string =>
    'sinks:\n' +
    `  - type: postgres\n    url: ${u}\n    table: t\n` +
    '  - { type: jsonl, path: out/jsonl }\n' +
    '  - { type: duckdb, path: out/w.duckdb, table: t }\n';
  const head = 'version: 1\nname: canary\nsource: { type: file, paths: [in.jsonl], format: jsonl }\n';
  const yaml = head + sinks(url('canary'));
  const dir = pipelineDir(yaml);
  const p = path.join(dir, 'p.yaml');
  const commands: Command[] = [];
  const run = async (args: string[], code: number): Promise<Command> => {
    const c = await sluice(args, env);
    commands.push(c);
    expect(c.code, `${args.join(' ')}\n${c.stderr}\n${c.stdout}`).toBe(code);
    return c;
  };
  const first = await run(['run', p, '--no-progress', '--debug'], 0);
  expect(first.stdout).toMatch(/^ {2}dead letters 1 /m);
  // The describe() line names where the sink writes, without the password.
  expect(first.stdout).toMatch(/postgres 127\.0\.0\.1:\d+\/canary table public\.t/);
  await run(['run', p, '--no-progress', '--log-format', 'json', '--fresh', '--allow-duplicates'], 0);
  await run(['plan', p], 0);
  await run(['schema', p], 0);
  await run(['runs', p], 0);
  await run(['runs', p, '--json'], 0);
  await run(['state', p], 0);
  await run(['dead-letters', p], 0);
  await run(['validate', p], 0);
  // A database that does not exist: the error line, its fix and the --debug stack, in text and in JSON.
  writeFileSync(p, head + sinks(url('nodb')));
  const failed = await run(['run', p, '--no-progress', '--debug'], EXIT_CODES.failure);
  expect(failed.stderr).toMatch(/^error: .*nodb/m);
  await run(['run', p, '--no-progress', '--log-format', 'json', '--debug'], EXIT_CODES.failure);
  await run(['runs', p], 0);
  await expectNoCanary(dir, commands, 'canary');
}

describe.skipIf(!withPostgres)('a Postgres password never reaches an output, a log or a file', () => {
  it('in a postgres:// URL (percent-encoded)', async () => {
    await postgresCommands(
      (db) =>
        `'postgres://canary_url:${encodeURIComponent(CANARY.url.secret).replace(/'/g, '%27')}@127.0.0.1:${pg.port}/${db}'`,
    );
  });

  // CI (SLUICE_SECRETS=full): the quoted form below covers the parser's harder path in `npm test`.
  it.runIf(process.env.SLUICE_SECRETS === 'full')("in libpq's key=value form, bare", async () => {
    await postgresCommands(
      (db) => `host=127.0.0.1 port=${pg.port} user=canary_kvb password=${CANARY.kvBare.secret} dbname=${db}`,
    );
  });

  it("in libpq's key=value form, quoted with escapes", async () => {
    const quoted = `'${CANARY.kvQuoted.secret.replace(/[\\']/g, '\\$&')}'`;
    // In YAML double quotes, so the backslashes of the libpq escapes are written twice.
    const yamlText = quoted.replace(/\\/g, '\\\\').replace(/"/g, '\\"');
    await postgresCommands(
      (db) => `"host=127.0.0.1 port=${pg.port} user=canary_kvq password = ${yamlText} dbname=${db}"`,
    );
  });

  // CI (SLUICE_SECRETS=full).
  it.runIf(process.env.SLUICE_SECRETS === 'full')('in PGPASSWORD', async () => {
    await postgresCommands((db) => `host=127.0.0.1 port=${pg.port} user=canary_env dbname=${db}`, {
      PGPASSWORD: CANARY.pgEnv.secret,
    });
  });
});

describe.skipIf(systemBinary('clickhouse') === undefined)(
  'a ClickHouse password never reaches an output, a log or a file',
  () => {
    let ch: ClickHouseServer;
    beforeAll(async () => {
      ch = await startClickHouse({ users: { canary: CANARY.clickhouse.secret } });
    }, 120_000);
    afterAll(() => ch?.stop());

    /** Every row of every table of the database, as text. */
    async function clickhouseText(database: string): Promise<string> {
      const tables = await ch.rows<{ name: string }>(`SELECT name FROM system.tables WHERE database = '${database}'`);
      let text = '';
      for (const { name } of tables)
        text += `${name}\n${await ch.query(`SELECT * FROM ${database}.\`${name}\` FORMAT TSV`)}`;
      return text;
    }

    it('in an http:// URL (percent-encoded)', async () => {
      const url = (user: string): string =>
        `'http://${user}:${encodeURIComponent(CANARY.clickhouse.secret).replace(/'/g, '%27')}@127.0.0.1:${ch.httpPort}'`;
      const yaml = (user: string): string =>
        'version: 1\nname: canary\nsource: { type: file, paths: [in.jsonl], format: jsonl }\nsinks:\n' +
        `  - type: clickhouse\n    url: ${url(user)}\n    database: canary\n    table: t\n` +
        '  - { type: jsonl, path: out/jsonl }\n';
      const dir = pipelineDir(yaml('canary'));
      const p = path.join(dir, 'p.yaml');
      const commands: Command[] = [];
      const run = async (args: string[], code: number): Promise<Command> => {
        const c = await sluice(args);
        commands.push(c);
        expect(c.code, `${args.join(' ')}\n${c.stderr}\n${c.stdout}`).toBe(code);
        return c;
      };
      const first = await run(['run', p, '--no-progress', '--debug', '--show', '2'], 0);
      expect(first.stdout).toMatch(/^ {2}dead letters 1 /m);
      // The describe() line names where the sink writes, without the password.
      expect(first.stdout).toMatch(/clickhouse http:\/\/127\.0\.0\.1:\d+\/canary table canary\.t/);
      await run(['run', p, '--no-progress', '--log-format', 'json', '--fresh', '--allow-duplicates'], 0);
      for (const args of [
        ['plan', p],
        ['schema', p],
        ['runs', p],
        ['runs', p, '--json'],
        ['state', p],
        ['dead-letters', p],
        ['validate', p],
      ])
        await run(args, 0);
      // A user the server does not know, with the same password: the error line, its fix and the --debug stack.
      writeFileSync(p, yaml('nouser'));
      const failed = await run(['run', p, '--no-progress', '--debug'], EXIT_CODES.failure);
      expect(failed.stderr).toMatch(/^error: clickhouse sink .*nouser/m);
      await run(['run', p, '--no-progress', '--log-format', 'json', '--debug'], EXIT_CODES.failure);
      await run(['runs', p], 0);
      await expectNoCanary(dir, commands);
      expect(leaksIn(await clickhouseText('canary'))).toEqual([]);
    });
  },
);

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('other credentials never reach an output, a log or a file', () => {
  const service = (baseUrl: string): string =>
    `version: 1\nname: canary\nservice:\n  base_url: '${baseUrl}'\n  api_key: \${SLUICE_API_KEY}\n` +
    '  retry: { retries: 0 }\n';

  it('the API key, and user:password@ in base_url: a run, its logs, its history, and a service not reached', async () => {
    const env = { SLUICE_API_KEY: CANARY.apiKey.secret };
    const reachable = emu.url.replace('://', `://svc:${CANARY.baseUrl.secret}@`);
    const dir = pipelineDir(service(reachable) + 'source: { type: countries }\nsink: { type: jsonl, path: out }\n');
    const p = path.join(dir, 'p.yaml');
    const commands = [
      await sluice(['run', p, '--no-progress', '--debug'], env),
      await sluice(['run', p, '--no-progress', '--log-format', 'json', '--fresh', '--allow-duplicates'], env),
      await sluice(['plan', p], env),
    ];
    for (const c of commands) expect(c.code, c.stderr).toBe(0);
    const port = await closedPort();
    writeFileSync(
      p,
      service(`http://svc:${CANARY.baseUrl.secret}@127.0.0.1:${port}`) +
        'source: { type: countries }\nsink: { type: jsonl, path: out }\n',
    );
    const down = [
      await sluice(['run', p, '--no-progress', '--debug'], env),
      await sluice(['run', p, '--no-progress', '--log-format', 'json'], env),
    ];
    for (const c of down) expect(c.code, c.stderr).toBe(EXIT_CODES.failure);
    expect(down[0]!.stderr).toMatch(/^error: cannot reach http:\/\/.*127\.0\.0\.1:\d+/m);
    expect(down[0]!.stderr).toMatch(/^ {2}fix: check service\.base_url/m);
    commands.push(...down, await sluice(['runs', p], env), await sluice(['runs', p, '--json'], env));
    await expectNoCanary(dir, commands);
  });

  it('an S3 secret key', async () => {
    const s3 = await startS3Server();
    try {
      await s3.createBucket('canary');
      const env = { AWS_SECRET_ACCESS_KEY: CANARY.s3.secret };
      const dir = pipelineDir(
        'version: 1\nname: canary\nsource: { type: file, paths: [in.jsonl], format: jsonl }\n' +
          'sink: { type: jsonl, path: s3://canary/out/ }\n',
      );
      const p = path.join(dir, 'p.yaml');
      const commands = [
        await sluice(['run', p, '--no-progress', '--debug'], env),
        await sluice(['run', p, '--no-progress', '--log-format', 'json', '--debug'], env),
        await sluice(['runs', p, '--json'], env),
      ];
      // s3rver takes any secret key: the runs succeed, and the key is used to sign every request.
      for (const c of commands) expect(c.code, c.stderr).toBe(0);
      await expectNoCanary(dir, commands);
      for (const key of await s3.keys('canary')) expect(leaksIn(await s3.get('canary', key)), key).toEqual([]);
    } finally {
      await s3.stop();
    }
  });

  it('values interpolated into the wrong option: validation errors show `${VAR}`, not the value', async () => {
    const env = { PGPW: CANARY.variable.secret, WORKERS: CANARY.plainVariable.secret };
    const dir = pipelineDir(
      "version: 1\nname: canary\nsource: { type: file, paths: [in.jsonl], format: jsonl, concurrency: '${WORKERS}' }\n" +
        "sink: { type: jsonl, path: out, write: '${PGPW}' }\n",
    );
    const p = path.join(dir, 'p.yaml');
    const commands = [
      await sluice(['validate', p], env),
      await sluice(['run', p, '--no-progress', '--debug'], env),
      await sluice(['run', p, '--no-progress', '--log-format', 'json'], env),
      await sluice(['plan', p], env),
    ];
    for (const c of commands) expect(c.code).toBe(EXIT_CODES.config);
    expect(commands[0]!.stdout).toContain('sink.write: a string from `${PGPW}` is not allowed');
    expect(commands[0]!.stdout).toContain('source.concurrency: expected a number, got a string from `${WORKERS}`');
    await expectNoCanary(dir, commands);
  });
});
