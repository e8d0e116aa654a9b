/**
 * The module graph of the repository (relative imports, resolved as NodeNext resolves them), and the cycles in it. Every kind of
 * reference counts: a type-only import ties two files together as much as a value import does (the design rule is
 * "no import cycles, type imports included"), and so do `import()` expressions and `import('…')` types.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/** Edges from a file to the files it imports, both as absolute paths. */
export type ImportGraph = Map<string, Set<string>>;

/**
 * Every module specifier written in a file: static, type-only, re-exported, dynamic, `import()` types, require.
 * TypeScript's own pre-processor finds them (what the language service uses to find a file's imports) without
 * building a syntax tree: four times faster over the repository than walking one, with the same answer.
 */
export function moduleSpecifiers(_fileName: string, text: string): string[] {
  return ts.preProcessFile(text, true, true).importedFiles.map((f) => f.fileName);
}

/** The source files (.ts, .js, .mts) under `dirs`, excluding declaration files. */
export function sourceFilesUnder(root: string, dirs: string[]): string[] {
  const files: string[] = [];
  const walk = (dir: string): void => {
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return; // a folder the repository does not have (yet) has no imports
    }
    for (const entry of entries) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (/\.(m?ts|m?js)$/.test(entry.name) && !entry.name.endsWith('.d.ts')) files.push(full);
    }
  };
  for (const dir of dirs) walk(path.join(root, dir));
  return files.sort();
}

/**
 * The graph among `files`. An import of the compiled output (`bin/` imports `dist/src/…js`) stands for the source
 * it was compiled from, so the graph is the same whether or not `npm run build` has run.
 */
export function importGraph(root: string, files: string[], read: (file: string) => string): ImportGraph {
  const inGraph = new Set(files);
  const dist = path.join(root, 'dist') + path.sep;
  const graph: ImportGraph = new Map();
  for (const file of files) {
    const targets = new Set<string>();
    for (const specifier of moduleSpecifiers(file, read(file))) {
      if (!specifier.startsWith('.')) continue; // packages and node: builtins are outside the graph
      // Relative specifiers name their file (NodeNext: no directory or extensionless imports), `x.js` for `x.ts`.
      let target = path.resolve(path.dirname(file), specifier);
      if (target.startsWith(dist)) target = path.join(root, path.relative(dist, target));
      target = sourceOf(target, inGraph);
      if (inGraph.has(target)) targets.add(target);
    }
    graph.set(file, targets);
  }
  return graph;
}

/** `x.js` written in an import means `x.ts` in a TypeScript source tree. */
function sourceOf(file: string, inGraph: Set<string>): string {
  if (inGraph.has(file)) return file;
  for (const [from, to] of [
    ['.js', '.ts'],
    ['.mjs', '.mts'],
  ] as const) {
    if (file.endsWith(from)) {
      const candidate = file.slice(0, -from.length) + to;
      if (inGraph.has(candidate)) return candidate;
    }
  }
  return file;
}

/**
 * The cycles of a graph: for every node that lies on a cycle, the shortest cycle through it, each reported once
 * (rotated to start at its smallest node). Not every elementary cycle (there can be exponentially many), but every
 * file on a cycle appears, and breaking every reported cycle leaves none.
 */
export function findCycles(graph: ImportGraph): string[][] {
  const cycles = new Map<string, string[]>();
  for (const component of stronglyConnected(graph)) {
    const members = new Set(component);
    for (const start of [...component].sort()) {
      const cycle = shortestCycleThrough(start, graph, members);
      if (!cycle) continue;
      const rotated = rotateToSmallest(cycle);
      cycles.set(rotated.join('\n'), rotated);
    }
  }
  return [...cycles.values()].sort((a, b) => a.join('\n').localeCompare(b.join('\n')));
}

/** Tarjan's algorithm, iterative so a deep import chain cannot overflow the stack. */
function stronglyConnected(graph: ImportGraph): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const components: string[][] = [];
  let counter = 0;
  for (const root of graph.keys()) {
    if (index.has(root)) continue;
    const work: { node: string; next: Iterator<string> }[] = [];
    const open = (node: string): void => {
      index.set(node, counter);
      low.set(node, counter);
      counter++;
      stack.push(node);
      onStack.add(node);
      work.push({ node, next: (graph.get(node) ?? new Set<string>()).values() });
    };
    open(root);
    while (work.length > 0) {
      const frame = work[work.length - 1]!;
      const step = frame.next.next();
      if (!step.done) {
        const to = step.value;
        if (!index.has(to)) open(to);
        else if (onStack.has(to)) low.set(frame.node, Math.min(low.get(frame.node)!, index.get(to)!));
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low.set(parent.node, Math.min(low.get(parent.node)!, low.get(frame.node)!));
      if (low.get(frame.node) === index.get(frame.node)) {
        const component: string[] = [];
        let member: string;
        do {
          member = stack.pop()!;
          onStack.delete(member);
          component.push(member);
        } while (member !== frame.node);
        const selfLoop = component.length === 1 && graph.get(frame.node)?.has(frame.node);
        if (component.length > 1 || selfLoop) components.push(component);
      }
    }
  }
  return components;
}

/** Breadth-first from `start` back to itself, staying inside its component. */
function shortestCycleThrough(start: string, graph: ImportGraph, members: Set<string>): string[] | undefined {
  const previous = new Map<string, string>();
  const queue = [start];
  for (let i = 0; i < queue.length; i++) {
    const node = queue[i]!;
    for (const to of graph.get(node) ?? []) {
      if (!members.has(to)) continue;
      if (to === start) {
        const cycle = [node];
        for (let at = node; at !== start;) {
          at = previous.get(at)!;
          cycle.unshift(at);
        }
        return cycle;
      }
      if (!previous.has(to)) {
        previous.set(to, node);
        queue.push(to);
      }
    }
  }
  return undefined;
}

function rotateToSmallest(cycle: string[]): string[] {
  let smallest = 0;
  for (let i = 1; i < cycle.length; i++) if (cycle[i]! < cycle[smallest]!) smallest = i;
  return [...cycle.slice(smallest), ...cycle.slice(0, smallest)];
}

/** `a → b → a`, with paths relative to the repository. */
export function formatCycle(root: string, cycle: string[]): string {
  return [...cycle, cycle[0]!].map((file) => path.relative(root, file)).join(' → ');
}
