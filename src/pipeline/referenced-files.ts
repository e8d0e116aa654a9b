/**
 * The local files a pipeline reads, checked when it is validated: a missing `queries_file` or filter-values file
 * used to pass `sluice validate` and fail the run later with a raw ENOENT (for a snapshot, right before the paid
 * filter call). Each problem names the option, so the loader reports it at the value's file:line:column.
 *
 * Which options name input files is a fact of each source's definition (`files`): a new source with a file option
 * names it there (the test beside this module fails for an example pipeline whose file is not checked).
 */
import { accessSync, constants, statSync, type Stats } from 'node:fs';
import path from 'node:path';
import { fileReferences, type FileReference } from '../contracts/component.js';
import type { YamlPath } from './interpolate.js';
import { formatPath, type Problem } from './issues.js';
import { registry as defaultRegistry, type Registry } from './registry.js';
import type { PipelineConfig } from './schema.js';

type Kind = FileReference['kind'];

interface Reference {
  path: YamlPath;
  value: string;
  kind: Kind;
  /** How the option is used, for the fix line. */
  what: string;
}

function referencesOf(config: PipelineConfig, registry: Registry): Reference[] {
  const source = config.source as { type: string };
  const def = registry.source.find((d) => d.type === source.type);
  const own = def?.files?.(source) ?? [];
  const emulator = fileReferences(
    ['faults'],
    config.service?.emulator?.faults,
    'file',
    "the emulator's fault-injection YAML",
  );
  return [
    ...own.map((r) => ({ ...r, path: ['source', ...r.at] })),
    ...emulator.map((r) => ({ ...r, path: ['service', 'emulator', ...r.at] })),
  ];
}

/**
 * The local files and directories a pipeline reads, resolved against `baseDir`: what a copy of the pipeline must
 * carry beside it (the npm package's example pipelines, test/deploy/package.test.ts).
 */
export function referencedFiles(
  config: PipelineConfig,
  baseDir: string,
  registry: Registry = defaultRegistry,
): string[] {
  return referencesOf(config, registry).map((ref) => path.resolve(baseDir, ref.value));
}

/** Every referenced file that is missing, of the wrong kind or unreadable, relative to `baseDir`. */
export function referencedFileProblems(
  config: PipelineConfig,
  baseDir: string,
  registry: Registry = defaultRegistry,
): Problem[] {
  const problems: Problem[] = [];
  for (const ref of referencesOf(config, registry)) {
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
