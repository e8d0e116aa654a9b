/**
 * What only the runtime (src/runtime/) may do, found in the code with the TypeScript checker: build a source or sink
 * context (an object literal whose type is `SourceContext` or `SinkContext`), open a sink (`.open(…)` on a value
 * that is a `Sink`), take a lock (`acquireRunLock(…)`). Every command uses the runtime for them; a file elsewhere
 * that does one of them is named with its line and what it did.
 */
import path from 'node:path';
import ts from 'typescript';

/** The contracts the rule is about, declared in src/core/. */
const CONTEXTS = new Set(['SourceContext', 'SinkContext']);
const LOCK = 'acquireRunLock';

export interface RuntimeOnlyOptions {
  /** Folders (relative to the root) where these are allowed: the runtime. */
  allowed: string[];
}

export function runtimeOnlyViolations(root: string, files: string[], opts: RuntimeOnlyOptions): string[] {
  const program = ts.createProgram(files, {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    strict: true,
    skipLibCheck: true,
    noEmit: true,
    types: ['node'],
  });
  const checker = program.getTypeChecker();
  const rel = (f: string): string => path.relative(root, f).split(path.sep).join('/');
  const isAllowed = (f: string): boolean => opts.allowed.some((a) => rel(f).startsWith(`${a}/`));
  const inCore = (d: ts.Declaration): boolean => rel(d.getSourceFile().fileName).startsWith('src/core/');

  /** The core interface a type is (or the first one it is made of), by name. */
  const coreInterface = (type: ts.Type, names: ReadonlySet<string>): string | undefined => {
    for (const t of type.isUnion() || type.isIntersection() ? type.types : [type]) {
      const symbol = t.getSymbol() ?? t.aliasSymbol;
      if (symbol && names.has(symbol.getName()) && (symbol.getDeclarations() ?? []).some(inCore))
        return symbol.getName();
    }
    return undefined;
  };
  /** A value is a sink when its type is the core `Sink` or a class that implements it. */
  const isSink = (type: ts.Type): boolean => {
    if (coreInterface(type, new Set(['Sink']))) return true;
    const symbol = type.getSymbol();
    for (const decl of symbol?.getDeclarations() ?? [])
      if (ts.isClassDeclaration(decl))
        for (const clause of decl.heritageClauses ?? [])
          for (const t of clause.types)
            if (coreInterface(checker.getTypeAtLocation(t.expression), new Set(['Sink']))) return true;
    return false;
  };

  const found: string[] = [];
  for (const file of program.getSourceFiles()) {
    const name = file.fileName;
    if (!files.includes(name) || isAllowed(name)) continue;
    const at = (node: ts.Node): string => {
      const { line } = file.getLineAndCharacterOfPosition(node.getStart());
      return `${rel(name)}:${line + 1}`;
    };
    const visit = (node: ts.Node): void => {
      if (ts.isObjectLiteralExpression(node)) {
        const type = checker.getContextualType(node);
        const made = type && coreInterface(type, CONTEXTS);
        if (made) found.push(`${at(node)}: builds a ${made} (ask the runtime for it)`);
      }
      if (ts.isCallExpression(node)) {
        const callee = node.expression;
        if (ts.isIdentifier(callee)) {
          // By what it is, not by the name it was imported as.
          const symbol = checker.getSymbolAtLocation(callee);
          const target = symbol && symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
          if (target?.getName() === LOCK) found.push(`${at(node)}: takes a lock (ask the runtime for it)`);
        }
        if (
          ts.isPropertyAccessExpression(callee) &&
          callee.name.text === 'open' &&
          isSink(checker.getTypeAtLocation(callee.expression))
        )
          found.push(`${at(node)}: opens a sink (ask the runtime for it)`);
      }
      ts.forEachChild(node, visit);
    };
    visit(file);
  }
  return found;
}
