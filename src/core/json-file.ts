/** Reading a JSON file sluice or its user wrote: one way, each caller saying what a bad file means to it. */
import { readFile } from 'node:fs/promises';

export interface JsonFileErrors {
  /** The file exists but cannot be read (or, unless `absentIsNone`, does not exist). */
  unreadable: (err: NodeJS.ErrnoException) => Error;
  /** Its text is not JSON: the error to throw, or undefined to take the file as absent (a file half-written). */
  invalid: (err: Error) => Error | undefined;
  /** A file that does not exist is no error: `undefined` is returned. */
  absentIsNone?: boolean;
}

/** The file's JSON value; `undefined` for an absent file with `absentIsNone`, or a bad one `invalid` accepts. */
export async function readJsonFile<T = unknown>(file: string, errors: JsonFileErrors): Promise<T | undefined> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code === 'ENOENT' && errors.absentIsNone) return undefined;
    throw errors.unreadable(e);
  }
  try {
    return JSON.parse(text) as T;
  } catch (err) {
    const e = errors.invalid(err as Error);
    if (e === undefined) return undefined;
    throw e;
  }
}

/**
 * A state file's text, or undefined when it does not exist yet (the first run): the JSON and JSON-lines files a run
 * keeps (history, dead letters, cursor changes) are absent until something is written to them.
 */
export async function readTextIfPresent(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}
