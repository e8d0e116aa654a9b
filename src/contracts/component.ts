/**
 * What a component (source, transform, sink) is built from: its registry entry and the shared services it may
 * use. Apart from core/types.ts because a component may need the service client, and core/types.ts stays free of
 * imports so every layer can depend on it.
 */
import type { z } from 'zod';
import type { ServiceClient } from '../client/index.js';
import type { DeclaredSchema } from '../core/declared.js';
import type { Logger } from '../core/types.js';

/** Shared services a component may need when it is built. */
export interface ComponentDeps {
  log: Logger;
  baseDir: string;
  /** Creates the service client for the pipeline's `service` block (lazily starts the embedded emulator). */
  client(): Promise<ServiceClient>;
  /**
   * The run is shard `index` of `count` (`--shard`): file sinks write into the one shared path, each shard with its
   * own manifest, temp area and file names (output-files/output-dir.ts).
   */
  shard?: { index: number; count: number };
}

/** One registry entry: the config schema lives beside the constructor, in the component's own file. */
export interface ComponentDef<K extends 'source' | 'transform' | 'sink', C = any, T = unknown> {
  kind: K;
  type: string;
  description: string;
  schema: z.ZodType<C>;
  create(config: C, deps: ComponentDeps): T;
  /**
   * Sources only: true when the source never calls the service (local files), so its pipelines need no `service`
   * block. Absent = the source calls the service.
   */
  offline?: boolean;
  /**
   * Transforms only: the columns the transform's output has, given the columns declared for its input (undefined:
   * not declared). A normalizer preset declares its own; a transform that passes rows through returns `input`; one
   * that reshapes rows in ways it cannot tell returns undefined (the sinks then infer). Absent = undefined.
   */
  declares?(config: C, input: DeclaredSchema | undefined): DeclaredSchema | undefined;
}
