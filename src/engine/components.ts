/**
 * Builds a pipeline's source, transforms and sinks from the explicit component lists.
 */
import path from 'node:path';
import type { ComponentDeps, Sink, Source, Transform } from '../core/types.js';
import { SluiceError } from '../core/errors.js';
import { findDef } from '../pipeline/registry.js';

export interface Built {
  source: Source;
  sourceType: string;
  transforms: { type: string; fn: Transform }[];
  sinks: { type: string; label: string; sink: Sink }[];
}

export function sinkConfigs(config: { sink?: unknown; sinks?: unknown[] }): { type: string; [k: string]: unknown }[] {
  const list = (config.sinks ?? (config.sink ? [config.sink] : [])) as { type: string }[];
  if (list.length === 0) throw new SluiceError('the pipeline has no sink', { hint: 'add a `sink:` block' });
  return list;
}

export function buildComponents(config: any, deps: ComponentDeps): Built {
  const sourceDef = findDef('source', config.source.type);
  const transforms = ((config.transforms ?? []) as { type: string }[]).map((t) => ({
    type: t.type,
    fn: findDef('transform', t.type).create(t, deps) as Transform,
  }));
  const sinks = sinkConfigs(config).map((s) => ({
    type: s.type,
    label: describeSink(s, deps.baseDir),
    sink: findDef('sink', s.type).create(s, deps) as Sink,
  }));
  return { source: sourceDef.create(config.source, deps) as Source, sourceType: config.source.type, transforms, sinks };
}

/**
 * A sink's type, where it writes and (DuckDB) its table. With `baseDir` (the pipeline file's directory, which
 * `path` is relative to) the path is shown as the user would type it from the current directory.
 */
export function describeSink(s: { type: string; [k: string]: unknown }, baseDir?: string): string {
  const where = baseDir === undefined ? String(s.path) : displayPath(path.resolve(baseDir, String(s.path)));
  if (s.type === 'duckdb') return `duckdb ${where} table ${String(s.table)}`;
  return `${s.type} ${where}`;
}

function displayPath(abs: string): string {
  const rel = path.relative(process.cwd(), abs);
  return rel === '' ? '.' : rel.startsWith('..') || path.isAbsolute(rel) ? abs : rel;
}
