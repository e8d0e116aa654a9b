/** What loading a pipeline file yields: validate.ts builds it, load.ts hands it to the engine and the CLI. */
import type { PipelineConfig } from './schema.js';

export interface LoadedPipeline {
  /** Absolute path of the pipeline file. */
  file: string;
  baseDir: string;
  name: string;
  /** The validated, interpolated config (see schema.ts). */
  config: PipelineConfig & Record<string, any>;
}
