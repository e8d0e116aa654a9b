/**
 * Merge keys checked against the columns the rows will have, as the transforms' definitions know them
 * (output-columns.ts): all of them, or some (a `company_profile` preset declares its columns and lets undeclared
 * fields pass through): a `primary_key` that names no such column used to surface only when the
 * first unit was written, after its requests were paid for. A key must be in every row, and only a declared column
 * is (an undeclared field is in the rows whose record happens to carry it). Where the transforms neither fix nor
 * declare the columns (a source's own rows), nothing is reported.
 */
import { didYouMean } from '../core/suggest.js';
import type { YamlPath } from './interpolate.js';
import { formatPath, type Problem } from './issues.js';
import { outputColumns } from './output-columns.js';
import type { Registry } from './registry.js';
import type { ComponentConfig, PipelineConfig } from './schema.js';

interface KeyColumns {
  columns: string[];
  hint: string;
}

/** The columns every row reaching the sinks has, as the transforms' definitions know them; undefined: not known. */
function keyColumns(transforms: PipelineConfig['transforms'], registry?: Registry): KeyColumns | undefined {
  const known = outputColumns(transforms, registry);
  if (!known) return undefined;
  const { columns, from } = known;
  if (!known.partial) return { columns, hint: `the columns after ${from} are: ${columns.join(', ')}` };
  return {
    columns,
    hint:
      `a merge key must be in every row: name columns ${from} declares (${columns.join(', ')}); ` +
      'a field it does not declare is only in the rows whose record carries it',
  };
}

export function mergeKeyProblems(config: PipelineConfig, registry?: Registry): Problem[] {
  const sinks: [YamlPath, ComponentConfig][] = config.sinks
    ? config.sinks.map((s, i) => [['sinks', i], s])
    : config.sink
      ? [[['sink'], config.sink]]
      : [];
  const withKeys = sinks.filter(([, s]) => Array.isArray(s.primary_key));
  if (withKeys.length === 0) return [];
  const known = keyColumns(config.transforms, registry);
  if (!known) return [];
  const problems: Problem[] = [];
  for (const [at, sink] of withKeys)
    (sink.primary_key as string[]).forEach((key, i) => {
      if (known.columns.includes(key)) return;
      const guess = didYouMean(key, known.columns);
      const path: YamlPath = [...at, 'primary_key', i];
      problems.push({
        path,
        message: `${formatPath(path)}: "${key}" is not a column of the rows this sink receives${guess ? ` (did you mean "${guess}"?)` : ''}`,
        hint: known.hint,
      });
    });
  return problems;
}
