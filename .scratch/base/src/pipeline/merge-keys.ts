/**
 * Merge keys checked against the columns the rows will have, where the transforms fix them (output-columns.ts):
 * a `primary_key` that names no output column used to surface only when the first unit was written, after its
 * requests were paid for. Where the columns are not known statically, nothing is reported.
 */
import { didYouMean } from '../core/suggest.js';
import type { YamlPath } from './interpolate.js';
import { formatPath, type Problem } from './issues.js';
import { outputColumns } from './output-columns.js';
import type { ComponentConfig, PipelineConfig } from './schema.js';

export function mergeKeyProblems(config: PipelineConfig): Problem[] {
  const sinks: [YamlPath, ComponentConfig][] = config.sinks
    ? config.sinks.map((s, i) => [['sinks', i], s])
    : config.sink
      ? [[['sink'], config.sink]]
      : [];
  const withKeys = sinks.filter(([, s]) => Array.isArray(s.primary_key));
  if (withKeys.length === 0) return [];
  const known = outputColumns(config.transforms);
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
        hint: `the columns after ${known.from} are: ${known.columns.join(', ')}`,
      });
    });
  return problems;
}
