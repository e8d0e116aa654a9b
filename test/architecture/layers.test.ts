import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { importGraph, sourceFilesUnder } from './import-graph.js';
import { formatViolation, layerViolations, parseLayerTable, type Layer } from './layers.js';

const root = path.resolve(import.meta.dirname, '../..');
const read = (file: string) => readFileSync(file, 'utf8');
const layers = parseLayerTable(read(path.join(root, 'ARCHITECTURE.md')));

describe('the layers of ARCHITECTURE.md', () => {
  it('name only layers the table has, each folder once', () => {
    const names = layers.map((l) => l.name);
    expect(names).toContain('core');
    expect(names).toContain('cli');
    for (const l of layers)
      for (const other of l.mayImport) expect(names, `${l.name} may import ${other}`).toContain(other);
    const folders = layers.flatMap((l) => l.folders);
    expect(new Set(folders).size).toBe(folders.length);
  });

  it('hold every import of src/, sinks/ and bin/: none runs back up (type-only imports included)', () => {
    const files = sourceFilesUnder(root, ['src', 'sinks', 'bin']);
    expect(files.length).toBeGreaterThan(50);
    const broken = layerViolations(root, importGraph(root, files, read), layers).map(formatViolation);
    expect(broken, `imports that break the layer table in ARCHITECTURE.md:\n${broken.join('\n')}`).toEqual([]);
  });
});

describe('layerViolations', () => {
  const table: Layer[] = [
    { name: 'core', folders: ['src/core'], mayImport: [] },
    { name: 'schema', folders: ['src/schema'], mayImport: ['core'] },
    { name: 'engine', folders: ['src/engine'], mayImport: ['core', 'schema'] },
  ];
  const tree = (files: Record<string, string>): string => {
    const dir = mkdtempSync(path.join(tmpdir(), 'sluice-layers-'));
    for (const [name, text] of Object.entries(files)) {
      mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
      writeFileSync(path.join(dir, name), text);
    }
    return dir;
  };
  const check = (dir: string): string[] => {
    const files = sourceFilesUnder(dir, ['src']);
    return layerViolations(dir, importGraph(dir, files, read), table).map(formatViolation);
  };

  it('names an import that runs back up, a type-only one included, with the rule it breaks', () => {
    const dir = tree({
      'src/core/types.ts': "import type { Column } from '../schema/column.js';\nexport type T = Column;\n",
      'src/schema/column.ts': "import { run } from '../engine/run.js';\nexport type Column = string;\nrun();\n",
      'src/engine/run.ts': "import type { T } from '../core/types.js';\nexport const run = (t?: T) => t;\n",
    });
    expect(check(dir)).toEqual([
      'src/core/types.ts → src/schema/column.ts: core may import nothing but itself; not schema',
      'src/schema/column.ts → src/engine/run.ts: schema may import core; not engine',
    ]);
  });

  it('lets a layer import itself and the layers below it', () => {
    const dir = tree({
      'src/core/a.ts': "import { b } from './b.js';\nexport const a = b;\n",
      'src/core/b.ts': 'export const b = 1;\n',
      'src/engine/run.ts': "import { a } from '../core/a.js';\nimport '../schema/x.js';\nexport const r = a;\n",
      'src/schema/x.ts': 'export {};\n',
    });
    expect(check(dir)).toEqual([]);
  });

  it('names a file that no layer holds', () => {
    const dir = tree({ 'src/stray/x.ts': 'export {};\n' });
    expect(check(dir)).toEqual(['src/stray/x.ts: the file is in no layer: add its folder to a row']);
  });
});

describe('parseLayerTable', () => {
  it('reads the rows under "## Layers", notes in parentheses and "nothing" aside', () => {
    const md = [
      '# x',
      '## Layers',
      'text',
      '| layer | folders | may import |',
      '|---|---|---|',
      '| core | `src/core/` | nothing |',
      '| sinks | `sinks/`, `src/x/` | core, observe (the checks option) |',
      '## Next',
      '| a | b | c |',
    ].join('\n');
    expect(parseLayerTable(md)).toEqual([
      { name: 'core', folders: ['src/core'], mayImport: [] },
      { name: 'sinks', folders: ['sinks', 'src/x'], mayImport: ['core', 'observe'] },
    ]);
  });
});
