/**
 * What a component (source, transform, sink) is built from: its registry entry and the shared services it may
 * use. Apart from the contracts in core/ (types.ts and the files it lists) because a component may need the service
 * client, and core imports nothing above itself so that every layer can depend on it.
 */
import type { z } from 'zod';
import type { ServiceClient } from '../client/index.js';
import type { DeclaredSchema } from '../core/declared.js';
import type { BackfillWindow, Logger } from '../core/types.js';

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
   * Sources only: the local files the config names, checked when the pipeline is validated (a missing file fails
   * `sluice validate`, not the run). Absent = none.
   */
  files?(config: C): FileReference[];
  /**
   * Transforms only: the columns the transform's output has, given the columns declared for its input (undefined:
   * not declared). A normalizer preset declares its own; a transform that passes rows through returns `input`; one
   * that reshapes rows in ways it cannot tell returns undefined (the sinks then infer). Absent = undefined.
   */
  declares?(config: C, input: DeclaredSchema | undefined): DeclaredSchema | undefined;
  /**
   * Sources only: the window a backfill (`sluice run --from … [--to …]`) loads, its values as the user typed them
   * parsed to the cursor's type, checked against the config before anything is locked or paid. Throws a
   * SluiceError (exit 2) naming the fix. Absent: the source cannot backfill.
   */
  backfill?(config: C, window: { from: string; to?: string }): BackfillWindow;
  /**
   * Transforms only: the names of the columns the transform's rows have, given those known for its input, where its
   * config alone fixes them (merge keys are checked against them when the pipeline is validated). `at` is the
   * transform's place (`transforms[2]`): a transform that fixes the set names itself there, for messages. Absent = unknown (the columns
   * depend on the data), and an unknown set is never reported against.
   */
  outputColumns?(config: C, input: KnownColumns | undefined, at: string): KnownColumns | undefined;
  /**
   * Sinks only: the output the shards of one pipeline share (a file sink's directory or `s3://` prefix), where
   * `sluice prepare` leaves the prepared job for shards on other machines and `sluice finalize` the list of the
   * shards' manifests. Absent, or undefined for this config: shards share nothing there (a database locks itself,
   * a URL scheme without an implementation needs the state directory on a shared volume).
   */
  sharedOutput?(config: C, baseDir: string): SharedOutput | undefined;
}

/** Column names known before any row is read, and the transform that fixed them. */
export interface KnownColumns {
  columns: string[];
  /** Which transform fixed them, for messages: `transforms[2] (normalize serp_organic)`. */
  from: string;
  /**
   * The rows have these columns and may carry others (a `company_profile` preset declares its columns and lets the
   * record's other fields through). Absent: these are all the rows' columns.
   */
  partial?: true;
}

/** A local file an option of a component names. */
export interface FileReference {
  /** The option's place inside the component's block: `['queries_file']`, `['files', 0]`. */
  at: (string | number)[];
  /** The path as written, relative to the pipeline file's directory. */
  value: string;
  /** A file, or (a list of inputs) a file or a directory of files. */
  kind: 'file' | 'file or directory';
  /** How the option is used, for the fix line. */
  what: string;
}

/** The references among `values` (an option's list, or one value) that are strings. */
export function fileReferences(
  at: (string | number)[],
  values: unknown,
  kind: FileReference['kind'],
  what: string,
): FileReference[] {
  if (typeof values === 'string') return [{ at, value: values, kind, what }];
  if (!Array.isArray(values)) return [];
  return values.flatMap((v, i) => (typeof v === 'string' ? [{ at: [...at, i], value: v, kind, what }] : []));
}

/** A small state object next to a shared output: a path or an object beside the data files. */
export interface SharedStateStore {
  /** Where the record is, for messages: a path or a URL. */
  readonly location: string;
  /** The record's text, or undefined when there is none (nothing prepared for this output). */
  read(): Promise<string | undefined>;
  write(text: string): Promise<void>;
}

export interface SharedOutput {
  /** The prepared job's record (`sluice prepare`). */
  prepared: SharedStateStore;
  /** The complete set's record, written by `sluice finalize` once every shard committed. */
  shardsRecord: SharedStateStore;
  /** The manifest shard `index` of `count` writes, relative to the output. */
  manifestName(shard: { index: number; count: number }): string;
  /**
   * Reads what `shards` left in the output (their manifests, unfinished commits' markers) and throws for a file that
   * names anything outside it: `sluice finalize` asks before its record names those manifests for readers.
   */
  checkShards?(shards: readonly { index: number; count: number }[]): Promise<void>;
}
