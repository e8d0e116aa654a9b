/**
 * The emulator's state file: one JSON document, read once at start and replaced whole on every save through a
 * temp file, fsync and rename (then an fsync of the directory), so a kill at any instant leaves the previous
 * complete state or the new one, never half of one.
 *
 * Reading is strict: a file that is not a complete emulator state (truncated, edited, another program's) is an
 * error that names the file, and it is never overwritten, since it may hold the only record of ids a client saved.
 * A missing file is a fresh start. A state written with other data options (seed, size, job pacing) is an error
 * too: its snapshots are made of that data, and serving them from other records would be silently wrong.
 */
import { mkdir, open, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { SluiceError } from '../core/errors.js';
import { readJsonFile } from '../core/json-file.js';

export const STATE_FORMAT = 'sluice-emulator-state';
export const STATE_VERSION = 1;

/** The options that decide what the saved ids refer to: records, and how fast filter jobs run. */
export interface DataOptions {
  seed: number;
  size: number;
  jobRecordsPerMinute: number;
  jobSchedulingMs: number;
}

const dataOptionsSchema = z.object({
  seed: z.number(),
  size: z.number(),
  jobRecordsPerMinute: z.number(),
  jobSchedulingMs: z.number(),
});

const stateFileSchema = z.object({
  format: z.literal(STATE_FORMAT),
  version: z.number().int().positive(),
  saved_at: z.string(),
  options: dataOptionsSchema,
  /** Per route module (and the clock and paid counters), each checked by its owner's schema. */
  sections: z.record(z.string(), z.unknown()),
});

export type StateFileContent = z.infer<typeof stateFileSchema>;

/** A state file the emulator cannot start from. */
export class EmulatorStateError extends SluiceError {
  constructor(message: string, opts: { hint: string; cause?: unknown }) {
    super(message, opts);
    this.name = 'EmulatorStateError';
  }
}

/** The saved sections, or undefined when the file does not exist yet. */
export async function readStateFile(file: string, options: DataOptions): Promise<Record<string, unknown> | undefined> {
  const json = await readJsonFile(file, {
    absentIsNone: true,
    unreadable: (err) =>
      new EmulatorStateError(`cannot read the emulator state ${file} (${err.code ?? 'error'})`, {
        hint: `give the user running the emulator read and write access to ${file}, or point it at another state file`,
        cause: err,
      }),
    invalid: (err) => unusable(file, `it is not valid JSON (${err.message})`, err),
  });
  if (json === undefined) return undefined;
  const parsed = stateFileSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.length ? `"${issue.path.join('.')}" ` : '';
    throw unusable(file, `it is not an emulator state file: ${where}${issue?.message ?? 'unexpected content'}`);
  }
  const content = parsed.data;
  if (content.version > STATE_VERSION)
    throw new EmulatorStateError(
      `the emulator state ${file} has version ${content.version}; this emulator reads version ${STATE_VERSION}`,
      { hint: 'it was written by a newer sluice: run that version, or point this one at another state file' },
    );
  const differing = (Object.keys(options) as (keyof DataOptions)[]).filter((k) => content.options[k] !== options[k]);
  if (differing.length > 0) {
    const list = (o: DataOptions): string => differing.map((k) => `${k} ${o[k]}`).join(', ');
    throw new EmulatorStateError(
      `the emulator state ${file} was written by an emulator with ${list(content.options)}; this one has ${list(options)}`,
      {
        hint: `its snapshots and requests are made of that data: start the emulator with ${list(content.options)}, or point it at another state file`,
      },
    );
  }
  return content.sections;
}

/**
 * The paid counters saved in a state file ({} when there is none yet): how a test proves what an embedded emulator,
 * gone with the CLI process that ran it, was paid for, over every run that shared the file.
 */
export async function readPaidCounters(file: string): Promise<Record<string, number>> {
  const json = await readJsonFile(file, { absentIsNone: true, unreadable: (err) => err, invalid: (err) => err });
  if (json === undefined) return {};
  const content = stateFileSchema.parse(json);
  return z.record(z.string(), z.number()).parse(content.sections.paid ?? {});
}

function unusable(file: string, why: string, cause?: unknown): EmulatorStateError {
  return new EmulatorStateError(`the emulator state ${file} is unusable: ${why}`, {
    hint:
      'it was changed or truncated outside the emulator, which leaves it untouched: restore it, or delete it to ' +
      'start empty (clients that saved snapshot or request ids from it must then start over)',
    ...(cause !== undefined && { cause }),
  });
}

/** Replaces the file durably: temp file in the same directory, fsync, rename, fsync of the directory. */
export async function writeStateFile(file: string, content: StateFileContent): Promise<void> {
  const dir = path.dirname(file);
  await mkdir(dir, { recursive: true });
  // One writer per file (saves are chained), so a fixed temp name is enough, and a kill mid-write leaves at most
  // this one stray file, replaced by the next save.
  const tmp = `${file}.tmp`;
  const fh = await open(tmp, 'w');
  try {
    await fh.writeFile(JSON.stringify(content));
    await fh.sync();
  } catch (err) {
    await fh.close();
    await rm(tmp, { force: true });
    throw err;
  }
  await fh.close();
  await rename(tmp, file);
  await fsyncDir(dir);
}

async function fsyncDir(dir: string): Promise<void> {
  let fh;
  try {
    fh = await open(dir, 'r');
    await fh.sync();
  } catch (err) {
    // Some filesystems refuse fsync on a directory; the rename itself is still atomic there.
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'EISDIR' && code !== 'EINVAL' && code !== 'EPERM') throw err;
  } finally {
    await fh?.close();
  }
}
