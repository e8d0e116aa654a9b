/**
 * The layers of the repository and the rule between them: a folder imports only the folders its row allows. The
 * table is ARCHITECTURE.md's "Layers" table, read from there, so the document and the check cannot drift apart.
 */
import path from 'node:path';
import type { ImportGraph } from './import-graph.js';

/** One row: a layer, the folders (relative to the root, `/`-separated) that make it, and what it may import. */
export interface Layer {
  name: string;
  folders: string[];
  /** Other layers this one may import (it may always import itself). */
  mayImport: string[];
}

export interface Violation {
  from: string;
  to: string;
  rule: string;
}

/**
 * The rows of the markdown table that follows the heading `## Layers`: `| name | folders | may import |`, folders and
 * layer names in backticks or bare, separated by commas; `—` or `nothing` for none.
 */
export function parseLayerTable(markdown: string): Layer[] {
  const section = /^## Layers\b[^\n]*\n([\s\S]*?)(?=^## |(?![\s\S]))/m.exec(markdown)?.[1];
  if (!section) throw new Error('no "## Layers" section');
  const rows = section.split('\n').filter((l) => /^\|/.test(l.trim()) && !/^\|\s*-/.test(l.trim()));
  const cells = rows.map((r) =>
    r
      .trim()
      .replace(/^\||\|$/g, '')
      .split('|')
      .map((c) => c.trim()),
  );
  const list = (cell: string): string[] =>
    cell
      .split(',')
      .map((s) =>
        s
          .replace(/`/g, '')
          .replace(/\s*\(.*\)$/, '')
          .trim(),
      )
      .filter((s) => s !== '' && s !== '—' && s !== 'nothing');
  return cells.slice(1).map(([name, folders, may]) => ({
    name: (name ?? '').replace(/`/g, ''),
    folders: list(folders ?? '').map((f) => f.replace(/\/$/, '')),
    mayImport: list(may ?? ''),
  }));
}

/** The layer a file belongs to: the row with the longest folder that contains it. */
export function layerOf(root: string, file: string, layers: Layer[]): Layer | undefined {
  const rel = path.relative(root, file).split(path.sep).join('/');
  let best: { layer: Layer; length: number } | undefined;
  for (const layer of layers)
    for (const folder of layer.folders)
      if ((rel === folder || rel.startsWith(`${folder}/`)) && folder.length > (best?.length ?? -1))
        best = { layer, length: folder.length };
  return best?.layer;
}

/** Every import of the graph that its file's layer does not allow, and every file no layer holds. */
export function layerViolations(root: string, graph: ImportGraph, layers: Layer[]): Violation[] {
  const rel = (f: string): string => path.relative(root, f).split(path.sep).join('/');
  const violations: Violation[] = [];
  for (const [from, targets] of graph) {
    const own = layerOf(root, from, layers);
    if (!own) {
      violations.push({ from: rel(from), to: '', rule: 'the file is in no layer: add its folder to a row' });
      continue;
    }
    for (const to of targets) {
      const theirs = layerOf(root, to, layers);
      if (!theirs || theirs === own || own.mayImport.includes(theirs.name)) continue;
      const allowed = own.mayImport.length > 0 ? own.mayImport.join(', ') : 'nothing but itself';
      violations.push({
        from: rel(from),
        to: rel(to),
        rule: `${own.name} may import ${allowed}; not ${theirs.name}`,
      });
    }
  }
  return violations.sort((a, b) => `${a.from} ${a.to}`.localeCompare(`${b.from} ${b.to}`));
}

export function formatViolation(v: Violation): string {
  return v.to ? `${v.from} → ${v.to}: ${v.rule}` : `${v.from}: ${v.rule}`;
}
