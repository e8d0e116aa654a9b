/**
 * Loading a pipeline file for a run: read it, validate it against the registered components (validate.ts), and
 * hand the engine the interpolated, defaulted config with the file's directory (relative paths resolve against it).
 */
import { readFile } from 'node:fs/promises';
import { ConfigError } from '../core/errors.js';
import type { Env } from './interpolate.js';
import { registry, type Registry } from './registry.js';
import type { LoadedPipeline } from './loaded-pipeline.js';
import { PipelineFileError, validatePipelineText, type Validation } from './validate.js';

export { PipelineFileError, type LoadedPipeline, type Validation };

export interface LoadOptions {
  /** Components to validate against (tests pass their own). */
  registry?: Registry;
}

export async function loadPipeline(
  file: string,
  env: Env = process.env,
  opts: LoadOptions = {},
): Promise<LoadedPipeline> {
  const { problems, pipeline } = await validatePipeline(file, env, opts);
  if (!pipeline) throw new PipelineFileError(problems);
  return pipeline;
}

export async function validatePipeline(
  file: string,
  env: Env = process.env,
  opts: LoadOptions = {},
): Promise<Validation> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a directory' : (err as Error).message;
    return {
      problems: [new ConfigError(file, 1, 1, `cannot read the pipeline file: ${why}`, 'pass the path of a .yaml file')],
    };
  }
  return validatePipelineText(file, text, env, opts.registry ?? registry);
}
