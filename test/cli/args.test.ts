import { describe, expect, it } from 'vitest';
import { jsonArg, listArg, lockWait, parseShard, positiveInt } from '../../src/cli/args.js';
import { parseDuration } from '../../src/core/duration.js';
import { runCli } from '../../src/cli/cli.js';
import { memoryIo } from './memory-io.js';
import { formatPlan } from '../../src/cli/commands/plan.js';

describe('option values', () => {
  it('parses shards i/n with 0 ≤ i < n', () => {
    expect(parseShard('0/4')).toEqual({ index: 0, count: 4 });
    expect(parseShard(' 3/4 ')).toEqual({ index: 3, count: 4 });
    for (const bad of ['4/4', '1/0', '-1/4', '1', 'a/b', '1/2/3']) expect(() => parseShard(bad)).toThrow(/--shard/);
  });

  it('parses whole numbers, JSON and lists', () => {
    expect(positiveInt('show')('5')).toBe(5);
    expect(() => positiveInt('show')('0')).toThrow('--show must be a whole number ≥ 1 (got "0")');
    expect(() => positiveInt('show')('2.5')).toThrow(/--show/);
    expect(jsonArg('plan')('{"type":"serp"}')).toEqual({ type: 'serp' });
    expect(() => jsonArg('plan')('{type')).toThrow(/^--plan is not valid JSON/);
    expect(listArg(['1.1.1.1,2.2.2.2', '3.3.3.3'])).toEqual(['1.1.1.1', '2.2.2.2', '3.3.3.3']);
    expect(listArg('a.com b.com')).toEqual(['a.com', 'b.com']);
  });
});

describe('durations', () => {
  it('parses 500ms, 90s, 10m, 1h30m; a bare number has no unit and is refused', () => {
    expect(parseDuration('500ms')).toBe(500);
    expect(parseDuration('90s')).toBe(90_000);
    expect(parseDuration('10m')).toBe(600_000);
    expect(parseDuration('1h30m')).toBe(5_400_000);
    expect(parseDuration('1.5s')).toBe(1500);
    for (const bad of ['10', '', 'm', '10 m', '10x', 'pipelines/x.yaml']) expect(parseDuration(bad)).toBeNaN();
  });

  it('--wait alone waits an hour; --wait=<duration> that long; a pipeline file after it gets a pointed message', () => {
    expect(lockWait('')).toBe(3_600_000);
    expect(lockWait('90s')).toBe(90_000);
    expect(() => lockWait('pipelines/x.yaml')).toThrow(
      '--wait takes a duration such as 90s, 10m or 1h (got "pipelines/x.yaml"): write --wait=10m, or put --wait after the pipeline file',
    );
  });
});

describe('plan output', () => {
  it('lists the first units, the requests, targets and notes', () => {
    const text = formatPlan(
      {
        pipeline: 'nightly',
        source: 'snapshot',
        units: [1, 2, 3].map((i) => ({ id: `snapshot:snap_x:part:${i}`, estimatedRecords: 1000 })),
        requests: ['GET /datasets/snapshots/snap_x/download × 3 (format jsonl)'],
        targets: ['duckdb out.duckdb table t'],
        estimatedRecords: 3000,
        notes: ['snapshot snap_x was started by an earlier run'],
      },
      2,
    );
    expect(text.split('\n')).toEqual([
      'plan: nightly (source snapshot)',
      'units: 3, about 3,000 records',
      '  snapshot:snap_x:part:1  (~1000 records)',
      '  snapshot:snap_x:part:2  (~1000 records)',
      '  … and 1 more',
      'requests: ',
      '  GET /datasets/snapshots/snap_x/download × 3 (format jsonl)',
      'targets:',
      '  duckdb out.duckdb table t',
      'notes:',
      '  snapshot snap_x was started by an earlier run',
    ]);
  });
});

/** What `sluice <words> --help` prints. */
async function help(words: string[]): Promise<string> {
  const io = memoryIo({});
  expect(await runCli([...words, '--help'], io)).toBe(0);
  return io.stdout.join('\n');
}

/** The commands (and subcommands) `--help` lists under `words`, as word lists. */
async function commands(words: string[] = []): Promise<string[][]> {
  const text = await help(words);
  const listed = [...text.matchAll(new RegExp(`^ {2}sluice ${words.map((w) => `${w} `).join('')}([a-z-]+)`, 'gm'))];
  const found: string[][] = [];
  for (const [, name] of listed) {
    const path = [...words, name!];
    const sub = await commands(path);
    found.push(path, ...sub);
  }
  return found;
}

/** The options of a command that take a value: every one `--help` does not type as [boolean]. */
async function valueOptions(words: string[]): Promise<string[]> {
  const text = (await help(words)).split(/^Options:$/m)[1]?.split(/^Examples:$/m)[0] ?? '';
  const blocks = text.split(/\n(?= {2}(?:-\w, )? *--)/);
  return blocks.flatMap((b) => {
    const name = /^ {2}(?:-\w, )? *(--[\w-]+)/.exec(b.replace(/^\n/, ''))?.[1];
    return name !== undefined && !/\[boolean\]/.test(b) ? [name] : [];
  });
}

describe('an option given an empty value', () => {
  it('is refused (exit 2, naming it) for every option of every command that takes a value, before the command runs', async () => {
    const all = await commands();
    expect(all).toContainEqual(['state', 'drop']);
    const tried: string[] = [];
    for (const words of all)
      for (const option of await valueOptions(words))
        for (const form of [[option, ''], [`${option}=`]]) {
          const io = memoryIo({});
          const code = await runCli([...words, 'p.yaml', ...form], io);
          const line = [...words, ...form].join(' ');
          expect(code, line).toBe(2);
          expect(io.stderr[0], line).toBe(`error: ${option} is given an empty value: an unset variable?`);
          tried.push(`${words.join(' ')} ${option}`);
        }
    // The ones that did harm: an empty --sink matched the only sink; an empty --wait meant an hour.
    expect(tried).toEqual(
      expect.arrayContaining(['state drop --sink', 'state reset --sink', 'run --wait', 'run --from']),
    );
    expect(tried.length).toBeGreaterThan(40);
  });

  it('an empty argument is refused too; one after a flag is an argument, not the flag’s value', async () => {
    for (const [args, message] of [
      [['run', ''], 'error: an argument is empty (after run): an unset variable?'],
      [['run', 'p.yaml', '--quiet', ''], 'error: an argument is empty (after --quiet): an unset variable?'],
      [['run', 'p.yaml', '--no-progress', ''], 'error: an argument is empty (after --no-progress): an unset variable?'],
    ] as const) {
      const io = memoryIo({});
      expect(await runCli([...args], io), args.join(' ')).toBe(2);
      expect(io.stderr[0]).toBe(message);
    }
  });
});
