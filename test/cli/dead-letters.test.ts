import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/cli.js';
import { memoryIo } from './memory-io.js';

function pipelineWithLetters(letters: object[]): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'sluice-dl-'));
  writeFileSync(path.join(dir, 'in.jsonl'), '{"a":1}\n');
  const file = path.join(dir, 'p.yaml');
  writeFileSync(
    file,
    'version: 1\nname: dl_test\nservice: { base_url: emulator, api_key: emulator-key }\n' +
      'source: { type: file, paths: [in.jsonl], format: jsonl }\nsink: { type: jsonl, path: out }\n',
  );
  const state = path.join(dir, '.sluice', 'dl_test');
  mkdirSync(state, { recursive: true });
  writeFileSync(path.join(state, 'dead-letters.jsonl'), letters.map((l) => JSON.stringify(l) + '\n').join(''));
  return file;
}

const letter = {
  unit: 'file:in.jsonl',
  offset: 120,
  stage: 'decode',
  reason: 'Unexpected token } in JSON',
  raw: '{"a":}',
  run: 'r1',
  at: '2026-01-01T00:00:00.000Z',
};

describe('sluice dead-letters', () => {
  it('lists what was rejected, where and why', async () => {
    const file = pipelineWithLetters([
      letter,
      { ...letter, offset: 200, stage: 'transform:cast', raw: 'x'.repeat(300) },
    ]);
    const io = memoryIo({});
    expect(await runCli(['dead-letters', file], io)).toBe(0);
    expect(io.stdout).toEqual([
      '2 dead letters not yet replayed (dl_test)',
      '2026-01-01T00:00:00.000Z file:in.jsonl decode @120: Unexpected token } in JSON\n    {"a":}',
      `2026-01-01T00:00:00.000Z file:in.jsonl transform:cast @200: Unexpected token } in JSON\n    ${'x'.repeat(160)}…`,
    ]);
    const json = memoryIo({});
    expect(await runCli(['dead-letters', file, '--json'], json)).toBe(0);
    expect(json.stdout.map((l) => JSON.parse(l) as unknown)).toEqual([
      letter,
      { ...letter, offset: 200, stage: 'transform:cast', raw: 'x'.repeat(300) },
    ]);
  });

  it('does not start an empty replay run when there is nothing to replay', async () => {
    const file = pipelineWithLetters([]);
    const io = memoryIo({});
    expect(await runCli(['dead-letters', file, '--replay'], io)).toBe(0);
    expect(io.stdout).toEqual(['no dead letters to replay']);
  });
});

describe('sluice dead-letters of a sharded run', () => {
  it("lists every shard's letters, one shard's with --shard, and replays each shard's once", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'sluice-dl-shards-'));
    // Units fall in shards by a hash of their id, which holds the file's temporary path and mtime: with 20 files
    // both shards get letters but for a chance of 2 in a million (with 6, one run in 32 put every file in one shard).
    const files = Array.from({ length: 20 }, (_, i) => String.fromCharCode(97 + i));
    // One good and one broken line per file: each file is a unit, so the letters land in the shards of their files.
    for (const f of files) writeFileSync(path.join(dir, `${f}.jsonl`), `{"id":"${f}1"}\n{"id":"${f}2",}\n`);
    const file = path.join(dir, 'p.yaml');
    writeFileSync(
      file,
      'version: 1\nname: dl_shards\n' +
        `source: { type: file, paths: [${files.map((f) => `${f}.jsonl`).join(', ')}], format: jsonl }\n` +
        'sink: { type: jsonl, path: out }\n',
    );
    for (const shard of ['0/2', '1/2'])
      expect(await runCli(['run', file, '--shard', shard, '--quiet'], memoryIo({}))).toBe(0);

    const all = memoryIo({});
    expect(await runCli(['dead-letters', file, '--json'], all)).toBe(0);
    const letters = all.stdout.map((l) => JSON.parse(l) as { shard: string; unit: string; raw: string });
    expect(letters.map((l) => l.raw).sort()).toEqual(files.map((f) => `{"id":"${f}2",}`));
    const shards = new Set(letters.map((l) => l.shard));
    expect(shards).toEqual(new Set(['0/2', '1/2']));

    const one = memoryIo({});
    expect(await runCli(['dead-letters', file, '--shard', '0/2'], one)).toBe(0);
    const inZero = letters.filter((l) => l.shard === '0/2').length;
    expect(one.stdout[0]).toBe(
      `${inZero} dead letter${inZero === 1 ? '' : 's'} not yet replayed (dl_shards, shard 0/2)`,
    );

    // Fix the records in each shard's letter file, then replay: every shard's letters load, each once.
    for (const s of ['shard-0-of-2', 'shard-1-of-2']) {
      const dl = path.join(dir, '.sluice', 'dl_shards', s, 'dead-letters.jsonl');
      writeFileSync(dl, readFileSync(dl, 'utf8').replaceAll('",}', '"}'));
    }
    expect(await runCli(['dead-letters', file, '--replay', '--quiet'], memoryIo({}))).toBe(0);
    expect(await runCli(['dead-letters', file, '--replay', '--quiet'], memoryIo({}))).toBe(0);
    const ids = outputLines(path.join(dir, 'out')).map((l) => (JSON.parse(l) as { id: string }).id);
    expect(ids.sort()).toEqual(files.flatMap((f) => [`${f}1`, `${f}2`]).sort());
    const after = memoryIo({});
    expect(await runCli(['dead-letters', file], after)).toBe(0);
    expect(after.stdout).toEqual(['0 dead letters not yet replayed (dl_shards)']);
  });
});

/** Every line of every committed .jsonl file under `dir` (shards and replays included). */
function outputLines(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.jsonl') && !e.parentPath.includes('.sluice'))
    .flatMap((e) => readFileSync(path.join(e.parentPath, e.name), 'utf8').split('\n').filter(Boolean));
}

describe('replaying rows a sink refused', () => {
  /** A pipeline whose transforms drop a row that went through them once: a sink's letter must enter after them. */
  function contractPipeline(dir: string, contract: string, extraSink = ''): string {
    const file = path.join(dir, 'p.yaml');
    writeFileSync(
      file,
      'version: 1\nname: dl_sink\nsource: { type: file, paths: [in], format: jsonl }\n' +
        'transforms:\n  - { type: filter, field: x, op: is_not_null }\n  - { type: rename, fields: { x: y } }\n' +
        `schema_contract: ${contract}\n` +
        (extraSink
          ? `sinks:\n  - { type: jsonl, path: out }\n  - ${extraSink}\n`
          : 'sink: { type: jsonl, path: out, target_file_mb: 1 }\n'),
    );
    return file;
  }

  it('a discard_row letter re-enters after the last transform; a discard_value letter is listed, never replayed', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'sluice-dl-sink-'));
    mkdirSync(path.join(dir, 'in'));
    writeFileSync(path.join(dir, 'in', '1.jsonl'), '{"x":1,"id":"a"}\n');
    expect(await runCli(['run', contractPipeline(dir, 'discard_row'), '--quiet'], memoryIo({}))).toBe(0);
    // A new column on the next night: discarded whole under discard_row.
    writeFileSync(path.join(dir, 'in', '2.jsonl'), '{"x":2,"id":"b","extra":"e"}\n');
    expect(await runCli(['run', contractPipeline(dir, 'discard_row'), '--quiet'], memoryIo({}))).toBe(0);
    const listed = memoryIo({});
    expect(await runCli(['dead-letters', contractPipeline(dir, 'discard_row'), '--json'], listed)).toBe(0);
    expect(listed.stdout.map((l) => (JSON.parse(l) as { raw: string }).raw)).toEqual(['{"y":2,"id":"b","extra":"e"}']);

    // The contract relaxed, the row loads: had it entered at the filter (its `x` is `y` by now) it would be dropped.
    const io = memoryIo({});
    expect(await runCli(['dead-letters', contractPipeline(dir, 'evolve'), '--replay', '--quiet'], io)).toBe(0);
    const rows = outputLines(path.join(dir, 'out')).map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(rows.sort((a, b) => String(a.id).localeCompare(String(b.id)))).toEqual([
      { y: 1, id: 'a' },
      { y: 2, id: 'b', extra: 'e' },
    ]);

    // discard_value keeps the row (without the value) and letters the value alone: nothing to replay.
    writeFileSync(path.join(dir, 'in', '3.jsonl'), '{"x":3,"id":"c","extra":"e","more":"m"}\n');
    expect(await runCli(['run', contractPipeline(dir, 'discard_value'), '--quiet'], memoryIo({}))).toBe(0);
    const again = memoryIo({});
    expect(await runCli(['dead-letters', contractPipeline(dir, 'evolve'), '--replay', '--quiet'], again)).toBe(0);
    expect(again.stderr.join('\n')).toMatch(/1 dead letter hold a value .* not replayed/);
    expect(again.stdout).toEqual(['no dead letters to replay']);
  });

  it('refuses to replay one sink’s letters into every sink of the pipeline', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'sluice-dl-sinks-'));
    mkdirSync(path.join(dir, 'in'));
    writeFileSync(path.join(dir, 'in', '1.jsonl'), '{"x":1,"id":"a"}\n');
    const two = (c: string): string => contractPipeline(dir, c, '{ type: jsonl, path: out2 }');
    expect(await runCli(['run', two('discard_row'), '--quiet'], memoryIo({}))).toBe(0);
    writeFileSync(path.join(dir, 'in', '2.jsonl'), '{"x":2,"id":"b","extra":"e"}\n');
    expect(await runCli(['run', two('discard_row'), '--quiet'], memoryIo({}))).toBe(0);
    const io = memoryIo({});
    expect(await runCli(['dead-letters', two('evolve'), '--replay'], io)).not.toBe(0);
    expect(io.stderr.join('\n')).toMatch(/one of its 2 sinks refused .* would load them into every sink/);
    expect(io.stderr.join('\n')).toMatch(/keeps only that sink/);
  });
});
