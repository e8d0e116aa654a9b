/** Placeholder until the pipeline loader lands: the shape the engine and CLI agree on. */
export interface LoadedPipeline {
  /** Absolute path of the pipeline file. */
  file: string;
  baseDir: string;
  name: string;
  /** The validated, interpolated config (see schema.ts). */
  config: any;
}
