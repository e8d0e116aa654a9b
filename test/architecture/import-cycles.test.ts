import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  findCycles,
  formatCycle,
  importGraph,
  moduleSpecifiers,
  sourceFilesUnder,
  type ImportGraph,
} from './import-graph.js';

const root = path.resolve(import.meta.dirname, '../..');
const read = (file: string) => readFileSync(file, 'utf8');

describe('the repository', () => {
  it('has no import cycles in src/, sinks/ or bin/ (type-only imports included)', () => {
    const files = sourceFilesUnder(root, ['src', 'sinks', 'bin']);
    expect(files.length).toBeGreaterThan(50);
    const cycles = findCycles(importGraph(root, files, read)).map((c) => formatCycle(root, c));
    expect(cycles, `import cycles:\n${cycles.join('\n')}`).toEqual([]);
  });
});

describe('moduleSpecifiers', () => {
  it('sees every way a file can refer to another', () => {
    const text = [
      "import a from './a.js';",
      "import type { B } from './b.js';",
      "import { type C } from './c.js';",
      "export { d } from './d.js';",
      "export type * from './e.js';",
      "const f = await import('./f.js');",
      "type G = typeof import('./g.js');",
      "let h: import('./h.js').H;",
      "import i = require('./i.js');",
      "import './j.js';",
    ].join('\n');
    expect(moduleSpecifiers('x.ts', text)).toEqual([
      './a.js',
      './b.js',
      './c.js',
      './d.js',
      './e.js',
      './f.js',
      './g.js',
      './h.js',
      './i.js',
      './j.js',
    ]);
  });
});

describe('findCycles', () => {
  const graph = (edges: Record<string, string[]>): ImportGraph =>
    new Map(Object.entries(edges).map(([from, to]) => [from, new Set(to)]));

  it('finds nothing in a graph without cycles', () => {
    expect(findCycles(graph({ a: ['b', 'c'], b: ['c'], c: [] }))).toEqual([]);
  });

  it('reports each cycle once, starting at its smallest file', () => {
    const cycles = findCycles(graph({ a: ['b'], b: ['c'], c: ['a', 'd'], d: ['e'], e: ['d'], f: ['f'], g: ['a'] }));
    expect(cycles).toEqual([['a', 'b', 'c'], ['d', 'e'], ['f']]);
  });

  it('reports both cycles of a figure eight', () => {
    const cycles = findCycles(graph({ hub: ['x', 'y'], x: ['hub'], y: ['hub'] }));
    expect(cycles).toEqual([
      ['hub', 'x'],
      ['hub', 'y'],
    ]);
  });

  it('finds a cycle made only of type imports in real files', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'sluice-cycles-'));
    mkdirSync(path.join(dir, 'src'));
    writeFileSync(path.join(dir, 'src/a.ts'), "import type { B } from './b.js';\nexport type A = { b: B };\n");
    writeFileSync(path.join(dir, 'src/b.ts'), "export type B = { a: import('./a.js').A };\n");
    writeFileSync(path.join(dir, 'src/c.ts'), "import type { A } from './a.js';\nexport type C = A;\n");
    const files = sourceFilesUnder(dir, ['src']);
    const cycles = findCycles(importGraph(dir, files, read)).map((c) => formatCycle(dir, c));
    expect(cycles).toEqual(['src/a.ts → src/b.ts → src/a.ts']);
  });

  it('follows bin/ into the compiled output as if it were the source', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'sluice-cycles-'));
    mkdirSync(path.join(dir, 'src'));
    mkdirSync(path.join(dir, 'bin'));
    writeFileSync(path.join(dir, 'bin/tool.js'), "await import('../dist/src/main.js');\n");
    writeFileSync(path.join(dir, 'src/main.ts'), "export const main = () => import('../bin/tool.js');\n");
    const files = sourceFilesUnder(dir, ['src', 'bin']);
    const cycles = findCycles(importGraph(dir, files, read)).map((c) => formatCycle(dir, c));
    expect(cycles).toEqual(['bin/tool.js → src/main.ts → bin/tool.js']);
  });
});
