/**
 * `sluice init`: a template for every registered source and sink, a written pipeline that validates and runs green
 * against the emulator as written (`npm test`: each source once, the sinks taken in turn, and one into ClickHouse;
 * SLUICE_INIT_MATRIX=full, as CI runs it: every source × every sink, Postgres and ClickHouse included), an
 * `.env.example` that names every variable the pipeline
 * reads and holds no value, and files never overwritten unless forced. The runs are in-process; the executable is
 * spawned once, for `init` itself.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/cli.js';
import { referencedVariables, scaffold } from '../../src/cli/init/scaffold.js';
import { SINK_TEMPLATES, SOURCE_TEMPLATES } from '../../src/cli/init/templates.js';
import { startEmulator, type EmulatorHandle } from '../../src/emulator/server.js';
import { limitsSchema as pipelineLimitsSchema } from '../../src/pipeline/limits-schema.js';
import { findDef, registeredTypes, registry } from '../../src/pipeline/registry.js';
import { pipelineSchema, serviceSchema } from '../../src/pipeline/schema.js';
import { objectShape } from '../../src/pipeline/schema-walk.js';
import { validatePipelineText } from '../../src/pipeline/validate.js';
import { startClickHouse, type ClickHouseServer } from '../support/clickhouse-server.js';
import { hasPostgres, startPostgres, type PostgresServer } from '../support/postgres-server.js';
import { systemBinary } from '../support/system-packages.js';
import { memoryIo } from './memory-io.js';

const FULL = process.env.SLUICE_INIT_MATRIX === 'full';
const ROOT = path.resolve(import.meta.dirname, '../..');
/** A key no other test's text holds: an in-process run registers it as a secret for the whole worker. */
const API_KEY = 'init-test-key-5d1e0b';
const SOURCES = registeredTypes('source');
const SINKS = registeredTypes('sink');
/** `npm test`: every source and every sink once (sinks taken in turn); the full matrix: every source × every sink. */
const pairs = FULL
  ? SOURCES.flatMap((source) => SINKS.map((sink) => [source, sink] as const))
  : SOURCES.map((source, i) => [source, SINKS[i % SINKS.length]!] as const);

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'sluice-init-'));
  dirs.push(dir);
  return dir;
}
afterAll(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function init(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const io = memoryIo({});
  const code = await runCli(['init', ...args], io);
  return { code, stdout: io.stdout.join('\n'), stderr: io.stderr.join('\n') };
}

describe('sluice init: templates from the registry', () => {
  it('has a template for every registered source and sink, and none for a component that is gone', () => {
    expect(Object.keys(SOURCE_TEMPLATES).sort()).toEqual([...SOURCES].sort());
    expect(Object.keys(SINK_TEMPLATES).sort()).toEqual([...SINKS].sort());
  });

  it('writes a pipeline that validates for every source and sink, with or without the variables set', () => {
    const env = {
      SLUICE_BASE_URL: 'https://api.example.test',
      SLUICE_API_KEY: 'k',
      DATABASE_URL: 'postgres://u@h/db',
      CLICKHOUSE_URL: 'http://u:p@h:8123',
      SLUICE_OUTPUT: 's3://bucket/prefix/',
    };
    for (const [source, sink] of pairs) {
      const [pipeline, ...others] = scaffold({ source, sink, name: `${source}_${sink}` });
      // What it reads beside it (the file source's sample), for the check that referenced files exist.
      const dir = tempDir();
      for (const f of others) {
        mkdirSync(path.dirname(path.join(dir, f.path)), { recursive: true });
        writeFileSync(path.join(dir, f.path), f.text);
      }
      // The variables change the service block and the sink's address: checked once per sink.
      for (const vars of source === pairs.find((p) => p[1] === sink)![0] ? [{}, env] : [{}]) {
        const v = validatePipelineText(path.join(dir, pipeline!.path), pipeline!.text, vars, registry);
        expect(
          v.problems.map((p) => p.message),
          `${source} → ${sink}`,
        ).toEqual([]);
        expect(v.pipeline?.config.source.type).toBe(source);
      }
    }
  });

  it('comments every option it sets and lists the options it leaves out, from the schemas', () => {
    const [pipeline] = scaffold({ source: 'snapshot', sink: 'postgres', name: 'p' });
    const text = pipeline!.text;
    // The description of `records_limit` (snapshot.ts) stands above it; paid jobs are capped from the first run.
    expect(text).toMatch(
      /# Most records the filter job places in the snapshot, and so is charged for\.(\n? *#?[^\n]*)*?\n {2}records_limit: \d+\n/,
    );
    // Left at their defaults: shown commented out with the default.
    expect(text).toMatch(/\n {2}# concurrency: 4\n/);
    expect(text).toMatch(/\n# fast_path: true\n/);
    // The sink merges on the source's key where it can; a file sink replaces instead.
    expect(text).toMatch(/write: merge\n.*\n {2}primary_key: \[ company_id \]/);
    expect(scaffold({ source: 'snapshot', sink: 'parquet', name: 'p' })[0]!.text).toMatch(/\n {2}write: replace\n/);
    // Against the embedded emulator unless SLUICE_BASE_URL says otherwise.
    expect(text).toContain('base_url: ${SLUICE_BASE_URL:-emulator}');
  });

  it('lists each option it leaves out with the default the docs give it, and every listed default is valid', () => {
    const [pipeline, ...others] = scaffold({ source: 'reviews', sink: 'duckdb', name: 'p' });
    const text = pipeline!.text;
    // Defaults the code applies and the descriptions state, not only zod's own.
    expect(text).toMatch(/\n {2}# connections: 64\n/);
    expect(text).toMatch(/\n {2}# retry: \{ retries: 5, base_delay_ms: 500, max_delay_ms: 30000 \}\n/);
    expect(text).toMatch(/\n {2}# sort: qualityScore\n/);
    expect(text).toMatch(/\n {2}# lineage: false\n/);
    // A mapping too long for a line, one option a line; a placeholder is no value.
    expect(text).toMatch(/\n# limits:\n# {3}max_record_bytes: 16 MiB\n(# {3}.*\n)*# {3}interrupt_grace_s: 25\n/);
    expect(text).toMatch(/\n# state_dir:\n/);
    // Every default listed, written in: the file still validates (each is a value its option takes). An option
    // line is `# <option>: <value>` for an option of the section it sits in (not a description that happens to
    // start with a word and a colon), or an option of a mapping listed one a line.
    const options = new Set(
      [
        pipelineSchema(registry),
        serviceSchema,
        findDef('source', 'reviews').schema,
        findDef('sink', 'duckdb').schema,
        pipelineLimitsSchema,
      ].flatMap((schema) => Object.keys(objectShape(schema) ?? {})),
    );
    let listed = 0;
    const uncommented = text
      .split('\n')
      .map((l) => {
        const m = /^( *)# ( {2})?([a-z_]+):( .+)?$/.exec(l);
        if (!m || !options.has(m[3]!) || (m[4] === undefined && m[3] !== 'limits')) return l;
        listed++;
        return `${m[1]}${m[2] ?? ''}${m[3]}:${m[4] ?? ''}`;
      })
      .join('\n');
    expect(listed).toBeGreaterThan(15);
    const dir = tempDir();
    for (const f of others) {
      mkdirSync(path.dirname(path.join(dir, f.path)), { recursive: true });
      writeFileSync(path.join(dir, f.path), f.text);
    }
    const v = validatePipelineText(path.join(dir, pipeline!.path), uncommented, {}, registry);
    expect(v.problems.map((p) => p.message)).toEqual([]);
    expect(v.pipeline?.config.service?.connections).toBe(64);
    expect(v.pipeline?.config.source.sort).toBe('qualityScore');
  });

  it('.env.example names every variable the pipeline reads, and no value', () => {
    for (const source of SOURCES)
      for (const sink of SINKS) {
        const files = scaffold({ source, sink, name: 'p' });
        const vars = referencedVariables(files[0]!.text);
        const env = files.find((f) => f.path === '.env.example');
        if (vars.length === 0) {
          expect(env, `${source} → ${sink}`).toBeUndefined();
          continue;
        }
        const lines = env!.text.split('\n').filter((l) => l.trim() && !l.startsWith('#'));
        expect(lines.map((l) => l.replace(/=$/, '')).sort(), `${source} → ${sink}`).toEqual([...vars].sort());
        expect(env!.text.match(/^#? ?[A-Z_]+=.+$/gm) ?? []).toEqual([]);
      }
  });
});

describe('sluice init: files', () => {
  it('refuses to overwrite, naming the files and the ways out (exit 2); --force overwrites', async () => {
    const dir = tempDir();
    expect((await init(['reviews', '--sink', 'postgres', '--dir', dir])).code).toBe(0);
    const file = path.join(dir, 'reviews_postgres.yaml');
    writeFileSync(file, '# mine\n');
    const again = await init(['reviews', '--sink', 'postgres', '--dir', dir]);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain(`error: not overwriting ${file}, ${path.join(dir, '.env.example')}: they exist`);
    expect(again.stderr).toMatch(/fix: pass --force to overwrite, or --dir <another directory>/);
    expect(readFileSync(file, 'utf8')).toBe('# mine\n');
    // Another name in the same directory still collides on .env.example only.
    const other = await init(['reviews', '--sink', 'postgres', '--dir', dir, '--name', 'other']);
    expect(other.code).toBe(2);
    expect(existsSync(path.join(dir, 'other.yaml'))).toBe(false);
    expect((await init(['reviews', '--sink', 'postgres', '--dir', dir, '--force'])).code).toBe(0);
    expect(readFileSync(file, 'utf8')).toMatch(/^# reviews → postgres/);
  });

  it('names the kinds there are for an unknown one, and refuses a name that cannot name a pipeline', async () => {
    const r = await init(['review', '--dir', tempDir()]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('unknown source kind "review" (did you mean "reviews"?)');
    expect(r.stderr).toContain(`the source kinds are ${SOURCES.join(', ')}`);
    const bad = await init(['serp', '--name', '../x', '--dir', tempDir()]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--name "../x" cannot name a pipeline');
  });
});

describe('sluice init: what it writes runs green against the emulator', () => {
  /** Without PostgreSQL here (named at the top of the run), the full matrix leaves the Postgres sink out. */
  const withPostgres = hasPostgres();
  let emu: EmulatorHandle;
  let pg: PostgresServer | undefined;
  let ch: ClickHouseServer | undefined;
  const withClickHouse = systemBinary('clickhouse') !== undefined;
  beforeAll(async () => {
    emu = await startEmulator({ apiKey: API_KEY, size: 2000, timeScale: 500 });
    if (FULL && withPostgres) {
      pg = await startPostgres();
      await pg.createDatabase('init');
    }
    if (withClickHouse) ch = await startClickHouse();
  });
  afterAll(async () => {
    await emu?.close();
    pg?.stop();
    ch?.stop();
  });

  /**
   * `npm test`: every source once, the sinks that need no server taken in turn, and one source into ClickHouse (the
   * server the suite starts itself); CI: every source × every sink.
   */
  const cells = FULL
    ? SOURCES.flatMap((source) =>
        SINKS.filter((sink) => (sink !== 'postgres' || withPostgres) && (sink !== 'clickhouse' || withClickHouse)).map(
          (sink) => [source, sink] as const,
        ),
      )
    : [
        ...SOURCES.map((source, i) => {
          const local = SINKS.filter((s) => s !== 'postgres' && s !== 'clickhouse');
          return [source, local[i % local.length]!] as const;
        }),
        ...(withClickHouse ? [['reviews', 'clickhouse'] as const] : []),
      ];

  it.each(cells)('%s → %s', async (source, sink) => {
    const dir = tempDir();
    expect((await init([source, '--sink', sink, '--dir', dir])).code).toBe(0);
    const io = memoryIo({
      SLUICE_BASE_URL: emu.url,
      SLUICE_API_KEY: API_KEY,
      ...(pg && { DATABASE_URL: pg.socketUrl('init') }),
      ...(ch && { CLICKHOUSE_URL: ch.url() }),
    });
    const file = path.join(dir, `${source}_${sink}.yaml`);
    const code = await runCli(['run', file, '--no-progress', '--log-format', 'json'], io);
    expect(code, io.stderr.join('\n')).toBe(0);
    const summary = JSON.parse(io.stdout[0]!) as { status: string; records: number; deadLetters: number };
    expect(summary).toMatchObject({ status: 'ok', deadLetters: 0 });
    expect(summary.records).toBeGreaterThan(0);
  });

  it('reviews pays for no page the service repeats: one review page per place, the searches once', async () => {
    // This emulator's clock is today's: it answers a later review page with the first again (docs/service.md §5.4).
    const dir = tempDir();
    expect((await init(['reviews', '--sink', 'jsonl', '--dir', dir])).code).toBe(0);
    const file = path.join(dir, 'reviews_jsonl.yaml');
    const run = async (): Promise<{ paidCalls: number; paid: { for: string; calls: number; wasted: number }[] }> => {
      const io = memoryIo({ SLUICE_BASE_URL: emu.url, SLUICE_API_KEY: API_KEY });
      expect(await runCli(['run', file, '--no-progress', '--log-format', 'json'], io), io.stderr.join('\n')).toBe(0);
      return JSON.parse(io.stdout[0]!) as Awaited<ReturnType<typeof run>>;
    };
    const first = await run();
    const places = first.paid.find((l) => l.for === 'review page')!;
    expect(places.calls).toBeGreaterThan(0);
    expect(first.paid.map((l) => [l.for, l.wasted])).toEqual([
      ['from_serp search page', 0],
      ['review page', 0],
    ]);
    // The next night finds the places it paid to find: the review pages alone are paid for.
    const second = await run();
    expect(second.paid).toEqual([places]);
  });

  it('end to end: the shipped executable writes it; with no variable set it runs on the embedded emulator', async () => {
    const dir = tempDir();
    const { SLUICE_BASE_URL: _url, SLUICE_API_KEY: _key, SLUICE_OUTPUT: _out, ...env } = process.env;
    const written = spawnSync(
      process.execPath,
      [path.join(ROOT, 'bin/sluice.js'), 'init', 'zone_cost', '--sink', 'jsonl'],
      {
        cwd: dir,
        env,
        encoding: 'utf8',
      },
    );
    expect(written.status, written.stderr).toBe(0);
    expect(written.stdout).toContain('run it:  sluice run zone_cost_jsonl.yaml --show 5');
    // Only the key is set (this file's own: the emulator's default key would become a secret for the whole worker).
    const io = memoryIo({ SLUICE_API_KEY: API_KEY });
    const code = await runCli(['run', path.join(dir, 'zone_cost_jsonl.yaml'), '--no-progress'], io);
    expect(code, io.stderr.join('\n')).toBe(0);
    expect(io.stderr.join('\n')).toMatch(/embedded emulator listening on http:\/\/127\.0\.0\.1:\d+/);
    expect(io.stdout.join('\n')).toMatch(/^ {2}records {6}6$/m);
  });
});
