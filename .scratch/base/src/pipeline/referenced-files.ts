/**
 * The local files a pipeline reads, checked when it is validated: a missing `queries_file` or filter-values file
 * used to pass `sluice validate` and fail the run later with a raw ENOENT (for a snapshot, right before the paid
 * filter call). Each problem names the option, so the loader reports it at the value's file:line:column.
 *
 * The table below is the one place that knows which options name input files; a new source with a file option
 * adds its entry here (the test beside this module fails for an example pipeline whose file is not checked).
 */
import { accessSync, constants, statSync, type Stats } from 'node:fs';
import path from 'node:path';
import type { YamlPath } from './interpolate.js';
import { formatPath, type Problem } from './issues.js';
import type { PipelineConfig } from './schema.js';

/** What a referenced path must be: a file, or (file source `paths`) a file or a directory of files. */
type Kind = 'file' | 'file or directory';

interface Reference {
  path: YamlPath;
  value: string;
  kind: Kind;
  /** How the option is used, for the fix line. */
  what: string;
}

function referencesOf(config: PipelineConfig): Reference[] {
  const refs: Reference[] = [];
  const source = config.source as Record<string, unknown>;
  const add = (at: YamlPath, value: unknown, kind: Kind, what: string): void => {
    if (typeof value === 'string') refs.push({ path: at, value, kind, what });
  };
  const each = (key: string, kind: Kind, what: string): void => {
    const list = source[key];
    if (Array.isArray(list)) list.forEach((v, i) => add(['source', key, i], v, kind, what));
  };
  switch (source.type) {
    case 'snapshot':
      each('files', 'file', 'a filter-values file (CSV or JSON) uploaded with the filter job');
      break;
    case 'serp':
      add(['source', 'queries_file'], source.queries_file, 'file', 'the queries to search');
      break;
    case 'reviews': {
      const fromSerp = source.from_serp as Record<string, unknown> | undefined;
      add(['source', 'from_serp', 'queries_file'], fromSerp?.queries_file, 'file', 'the queries whose places are read');
      break;
    }
    case 'file':
      each('paths', 'file or directory', 'an input file or a directory of them');
      break;
  }
  add(
    ['service', 'emulator', 'faults'],
    config.service?.emulator?.faults,
    'file',
    "the emulator's fault-injection YAML",
  );
  return refs;
}

/** Every referenced file that is missing, of the wrong kind or unreadable, relative to `baseDir`. */
export function referencedFileProblems(config: PipelineConfig, baseDir: string): Problem[] {
  const problems: Problem[] = [];
  for (const ref of referencesOf(config)) {
    const full = path.resolve(baseDir, ref.value);
    const problem = problemOf(full, ref.kind);
    if (problem)
      problems.push({
        path: ref.path,
        message: `${formatPath(ref.path)}: ${problem}: ${full}`,
        hint: `name ${ref.what}; relative paths start at the pipeline file's directory (${baseDir})`,
      });
  }
  return problems;
}

function problemOf(full: string, kind: Kind): string | undefined {
  let st: Stats;
  try {
    st = statSync(full);
  } catch (err) {
    return describe(err, 'no such file');
  }
  if (st.isDirectory() && kind === 'file') return 'a directory, not a file';
  if (!st.isDirectory() && !st.isFile()) return 'not a regular file';
  try {
    accessSync(full, st.isDirectory() ? constants.R_OK | constants.X_OK : constants.R_OK);
  } catch (err) {
    return describe(err, 'cannot be read');
  }
  return undefined;
}

function describe(err: unknown, fallback: string): string {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ENOENT' || code === 'ENOTDIR') return 'no such file';
  if (code === 'EACCES' || code === 'EPERM') return 'permission denied';
  return `${fallback} (${code ?? String(err)})`;
}
