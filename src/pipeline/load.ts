/**
 * Loading a pipeline file for a run: read it, validate it against the registered components (validate.ts), and
 * hand the engine the interpolated, defaulted config with the file's directory (relative paths resolve against it).
 */
import { open } from 'node:fs/promises';
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
    text = await readLimited(file);
  } catch (err) {
    if (err instanceof ConfigError) return { problems: [err] };
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a directory' : (err as Error).message;
    return {
      problems: [new ConfigError(file, 1, 1, `cannot read the pipeline file: ${why}`, 'pass the path of a .yaml file')],
    };
  }
  return validatePipelineText(file, text, env, opts.registry ?? registry);
}

/**
 * Pipeline files are a few kilobytes (long value lists go in the files a filter or `queries_file` names): a larger
 * one is a mistake — a data file passed instead, or something made to stall the parser — and is refused before it
 * is read, or, from a device or pipe, once that much has been read.
 */
export const MAX_PIPELINE_BYTES = 1 << 20;

async function readLimited(file: string): Promise<string> {
  const fh = await open(file, 'r');
  try {
    const size = (await fh.stat()).size;
    const buffer = Buffer.alloc(MAX_PIPELINE_BYTES + 1);
    let read = 0;
    while (size <= MAX_PIPELINE_BYTES && read < buffer.length) {
      const { bytesRead } = await fh.read(buffer, read, buffer.length - read, null);
      if (bytesRead === 0) break;
      read += bytesRead;
    }
    if (size > MAX_PIPELINE_BYTES || read > MAX_PIPELINE_BYTES)
      throw new ConfigError(
        file,
        1,
        1,
        `the pipeline file is larger than ${MAX_PIPELINE_BYTES / (1 << 20)} MiB (${size > MAX_PIPELINE_BYTES ? `${size} bytes` : 'and still going'}): not a pipeline file`,
        'pass the pipeline YAML; put long lists of values in a file the pipeline names (a filter file, `queries_file`)',
      );
    return buffer.subarray(0, read).toString('utf8');
  } finally {
    await fh.close();
  }
}
