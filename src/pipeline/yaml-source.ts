/**
 * A pipeline file parsed with its source positions kept, so every problem can be reported at file:line:column:
 * the value at a path, the key of an unknown option, or (for a missing option) the mapping that lacks it.
 */
import { isAlias, isMap, isScalar, isSeq, LineCounter, parseDocument, type Document, type Node, type Pair } from 'yaml';
import type { YamlPath } from './interpolate.js';

export interface YamlSource {
  /** The file as the user named it (used in messages). */
  file: string;
  text: string;
  doc: Document;
  lines: LineCounter;
}

export interface Position {
  line: number;
  column: number;
}

export interface YamlSyntaxProblem extends Position {
  message: string;
  /** The text of the line the error is on. */
  sourceLine: string;
}

function lineText(source: YamlSource, line: number): string {
  const start = source.lines.lineStarts[line - 1] ?? 0;
  const end = source.text.indexOf('\n', start);
  return source.text.slice(start, end < 0 ? undefined : end);
}

export function parseYaml(file: string, text: string): { source: YamlSource; problems: YamlSyntaxProblem[] } {
  const lines = new LineCounter();
  // Keys stay unique (a repeated option is an error, not a silent override); `version: 1` is the YAML 1.2 int.
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: true, uniqueKeys: true });
  const source = { file, text, doc, lines };
  // Only the first syntax error: the parser's later ones are mostly consequences of it.
  const problems = doc.errors.slice(0, 1).map((e) => {
    const at = e.linePos?.[0];
    const line = at?.line ?? 1;
    const text = e.message
      .split('\n')[0]!
      .replace(/ at line \d+, column \d+:?\s*$/, '')
      .trim();
    // The parser recurses per level: a file nested thousands deep ends its stack, which says nothing to a user.
    const nested = /Maximum call stack size exceeded/.test(text);
    return {
      line,
      column: at?.col ?? 1,
      message: nested ? 'invalid YAML: nested too deeply (thousands of levels)' : `invalid YAML: ${text}`,
      sourceLine: text.length ? lineText(source, line) : '',
    };
  });
  return { source, problems };
}

export function positionAt(source: YamlSource, offset: number): Position {
  const { line, col } = source.lines.linePos(offset);
  return { line, column: col };
}

interface Found {
  /** The deepest node that exists along the path. */
  node: Node | null;
  /** Its key in the parent mapping, when it is a mapping value (used when the value itself is empty). */
  keyNode: Node | null;
  /** How many path segments were resolved. */
  depth: number;
}

function walk(source: YamlSource, path: YamlPath): Found {
  let node = source.doc.contents as Node | null;
  let keyNode: Node | null = null;
  let depth = 0;
  for (const seg of path) {
    if (node && isAlias(node)) node = (node.resolve(source.doc) as Node | undefined) ?? null;
    if (node && isMap(node)) {
      const pair = findPair(node.items as Pair<unknown, unknown>[], seg);
      if (!pair) break;
      keyNode = pair.key as Node;
      node = (pair.value as Node | null) ?? null;
    } else if (node && isSeq(node) && typeof seg === 'number' && seg < node.items.length) {
      keyNode = null;
      node = (node.items[seg] as Node | null) ?? null;
    } else break;
    depth++;
    if (node === null) break;
  }
  return { node, keyNode, depth };
}

function findPair(items: Pair<unknown, unknown>[], seg: string | number): Pair<unknown, unknown> | undefined {
  return items.find((p) => (isScalar(p.key) ? String(p.key.value) : String(p.key)) === String(seg));
}

function nodeStart(node: Node | null): number | undefined {
  return node?.range?.[0];
}

/**
 * Where to report a problem at `path`: the node there, else its key (an empty value), else the nearest existing
 * parent (for a missing option: the mapping that lacks it).
 */
export function locate(source: YamlSource, path: YamlPath): Position {
  const found = walk(source, path);
  const offset = nodeStart(found.node) ?? nodeStart(found.keyNode) ?? 0;
  return positionAt(source, offset);
}

/** The position of `key` inside the mapping at `path` (an unknown option is reported at its key). */
export function locateKey(source: YamlSource, path: YamlPath, key: string): Position {
  const found = walk(source, path);
  let node = found.depth === path.length ? found.node : null;
  if (node && isAlias(node)) node = (node.resolve(source.doc) as Node | undefined) ?? null;
  if (node && isMap(node)) {
    const pair = findPair(node.items as Pair<unknown, unknown>[], key);
    const at = nodeStart((pair?.key as Node | undefined) ?? null);
    if (at !== undefined) return positionAt(source, at);
  }
  return locate(source, path);
}
