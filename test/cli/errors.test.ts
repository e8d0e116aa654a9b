import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/cli.js';
import { memoryIo } from './memory-io.js';

const broken = path.resolve(import.meta.dirname, '../fixtures/broken');

describe('failures end with one error line and one fix line', () => {
  it('an unknown command exits 2 and suggests the nearest command', async () => {
    const io = memoryIo();
    expect(await runCli(['valdate', 'x.yaml'], io)).toBe(2);
    expect(io.stderr).toEqual([
      'error: unknown command "valdate" (did you mean "validate"?)',
      '  fix: the commands are init, run, prepare, finalize, validate, plan, schema, emulator, zones, datasets, dead-letters, runs, state, report, compact; see sluice --help',
    ]);
  });

  it('an unknown option exits 2 without running the command', async () => {
    const io = memoryIo();
    expect(await runCli(['run', path.join(broken, 'wrong-type.yaml'), '--frsh'], io)).toBe(2);
    expect(io.stderr).toEqual([
      'error: Unknown argument: frsh',
      '  fix: see sluice run --help for the arguments and examples',
    ]);
    expect(io.stdout).toEqual([]);
  });

  it('a missing argument and a bad option value exit 2', async () => {
    const missing = memoryIo();
    expect(await runCli(['zones', 'cost'], missing)).toBe(2);
    expect(missing.stderr[0]).toBe('error: `sluice zones cost` is missing an argument');
    const shard = memoryIo();
    expect(await runCli(['run', 'p.yaml', '--shard', '4/4'], shard)).toBe(2);
    expect(shard.stderr[0]).toBe('error: --shard must be i/n with 0 ≤ i < n, e.g. 0/4 (got "4/4")');
  });

  it('a broken pipeline exits 2 (config) naming file:line:column, without a stack trace', async () => {
    const file = path.join(broken, 'unknown-key-source.yaml');
    for (const command of ['run', 'plan', 'dead-letters']) {
      const io = memoryIo();
      expect(await runCli([command, file], io)).toBe(2);
      expect(io.stderr).toEqual([
        `error: ${file}:10:3: source.max_page: unknown key "max_page" (did you mean "max_pages"?)`,
        expect.stringMatching(/^ {2}fix: allowed keys in source \(serp\): type, zone, /),
      ]);
    }
  });

  it('--debug adds the stack trace', async () => {
    const io = memoryIo();
    expect(await runCli(['plan', path.join(broken, 'wrong-type.yaml'), '--debug'], io)).toBe(2);
    expect(io.stderr[0]).toMatch(/^error: .*wrong-type\.yaml:10:16: /);
    expect(io.stderr.slice(2).join('\n')).toMatch(/\n\s+at /);
  });

  it('account-changing and paid commands refuse to run without --yes', async () => {
    const cases = [
      ['zones', 'create', 'z1'],
      ['zones', 'refresh-ips', 'z1'],
      ['zones', 'remove-domain', 'z1', '--type', 'whitelist', '--domain', 'example.com'],
      ['datasets', 'filter', 'gd_x', '--filter', '{"name":"a","operator":"=","value":"b"}', '--records-limit', '10'],
    ];
    for (const args of cases) {
      const io = memoryIo({ SLUICE_BASE_URL: 'http://127.0.0.1:9', SLUICE_API_KEY: 'k' });
      expect(await runCli([...args], io)).toBe(2);
      expect(io.stderr[0]).toMatch(/: not done without --yes$/);
      expect(io.stderr[1]).toBe('  fix: add --yes to confirm (this changes the account or costs money)');
    }
  });

  it('a filter job needs --records-limit, or --uncapped to start one without a cap (as the vendor’s CLI)', async () => {
    const filter = ['datasets', 'filter', 'gd_x', '--filter', '{"name":"a","operator":"=","value":"b"}', '--yes'];
    const io = memoryIo({ SLUICE_BASE_URL: 'http://127.0.0.1:9', SLUICE_API_KEY: 'k' });
    expect(await runCli(filter, io)).toBe(2);
    expect(io.stderr.join('\n')).toMatch(/give --records-limit N .*, or --uncapped \(one of them\)/);
    const both = memoryIo({ SLUICE_BASE_URL: 'http://127.0.0.1:9', SLUICE_API_KEY: 'k' });
    expect(await runCli([...filter, '--records-limit', '5', '--uncapped'], both)).toBe(2);
  });

  it('service commands say how to give the address and the key (exit 2: config)', async () => {
    const noUrl = memoryIo({});
    expect(await runCli(['zones', 'active'], noUrl)).toBe(2);
    expect(noUrl.stderr).toEqual([
      'error: no service address',
      '  fix: set SLUICE_BASE_URL=https://api.brightdata.com or pass --base-url (`--base-url emulator` works offline)',
    ]);
    const noKey = memoryIo({ SLUICE_BASE_URL: 'https://api.example.com' });
    expect(await runCli(['datasets', 'list', '--api-key-env', 'MY_KEY'], noKey)).toBe(2);
    expect(noKey.stderr[0]).toBe('error: no API key: MY_KEY is not set');
  });
});
