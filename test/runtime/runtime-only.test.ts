/**
 * One runtime: no command outside src/runtime/ builds a source or sink context, opens a sink or takes a lock by hand
 * (test/runtime/runtime-only.ts finds them with the TypeScript checker). Held on the whole tree, and shown to catch
 * each kind on a small tree that has one of each.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sourceFilesUnder } from '../architecture/import-graph.js';
import { runtimeOnlyViolations } from './runtime-only.js';

const root = path.resolve(import.meta.dirname, '../..');
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('only the runtime builds contexts, opens sinks and takes locks', () => {
  it('holds for src/ and sinks/', () => {
    const files = sourceFilesUnder(root, ['src', 'sinks']);
    expect(files.length).toBeGreaterThan(200);
    const found = runtimeOnlyViolations(root, files, { allowed: ['src/runtime'] });
    expect(found, `done outside src/runtime/:\n${found.join('\n')}`).toEqual([]);
  }, 120_000);

  it('names each kind, with its file and line, outside the runtime; the runtime itself may', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'sluice-runtime-only-'));
    dirs.push(dir);
    const tree: Record<string, string> = {
      'src/core/source-contract.ts': 'export interface SourceContext { baseDir: string }\n',
      'src/core/sink-contract.ts':
        'export interface SinkContext { pipeline: string }\n' +
        'export interface Sink { open(ctx: SinkContext): Promise<void>; writeUnit(): void }\n',
      'src/state/run-lock.ts': 'export async function acquireRunLock(file: string): Promise<string> { return file; }\n',
      'src/runtime/runtime.ts': [
        "import type { Sink, SinkContext } from '../core/sink-contract.js';",
        "import { acquireRunLock } from '../state/run-lock.js';",
        'export async function open(s: Sink): Promise<void> {',
        "  const ctx: SinkContext = { pipeline: 'p' };",
        "  await acquireRunLock('x');",
        '  await s.open(ctx);',
        '}',
      ].join('\n'),
      'src/operations/command.ts': [
        "import type { SourceContext } from '../core/source-contract.js';",
        "import type { Sink } from '../core/sink-contract.js';",
        "import { acquireRunLock as lock } from '../state/run-lock.js';",
        'class FileSink implements Sink {',
        '  async open(): Promise<void> {}',
        '  writeUnit(): void {}',
        '}',
        'export async function command(s: Sink, f: FileSink): Promise<SourceContext> {',
        "  await lock('run.lock');",
        "  await s.open({ pipeline: 'p' });",
        '  await f.open();',
        "  return { baseDir: '.' };",
        '}',
      ].join('\n'),
    };
    for (const [name, text] of Object.entries(tree)) {
      mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
      writeFileSync(path.join(dir, name), text);
    }
    const found = runtimeOnlyViolations(dir, sourceFilesUnder(dir, ['src']), { allowed: ['src/runtime'] });
    expect(found).toEqual([
      'src/operations/command.ts:9: takes a lock (ask the runtime for it)',
      'src/operations/command.ts:10: opens a sink (ask the runtime for it)',
      'src/operations/command.ts:10: builds a SinkContext (ask the runtime for it)',
      'src/operations/command.ts:11: opens a sink (ask the runtime for it)',
      'src/operations/command.ts:12: builds a SourceContext (ask the runtime for it)',
    ]);
  }, 60_000);
});
