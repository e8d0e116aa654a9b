/**
 * What one emulator instance keeps across restarts when started with `stateFile` (a no-op without one).
 *
 * Each owner of state (a route module, the clock, the paid counters) registers a named section: it gets back what
 * the previous instance saved under that name, checked by its own schema, and gives a function that returns what
 * to save now. Two ways to save:
 * - `commit()` before answering with an id a client keeps (snapshot, deep-lookup request, zone…): it resolves once
 *   a save that includes the change is on disk, so a kill -9 loses only what no client received an id for.
 *   Concurrent commits share one save.
 * - `changed()` for bookkeeping no client refers to by id (zone traffic, request-id serials): saved within
 *   DEBOUNCE_MS, and by `flush()` when the server closes.
 * Nothing is written until something changes, so a client that only reads (`plan`) leaves no file behind.
 */
import type { z } from 'zod';
import {
  EmulatorStateError,
  STATE_FORMAT,
  STATE_VERSION,
  readStateFile,
  writeStateFile,
  type DataOptions,
} from './state-file.js';

const DEBOUNCE_MS = 1_000;

export class PersistedState {
  private readonly savers = new Map<string, () => unknown>();
  /** The save that will include every change made so far, if one is waiting for the current one to end. */
  private queued: Promise<void> | undefined;
  /** The save in progress (never rejects: its error went to the commits that waited on it). */
  private writing: Promise<void> = Promise.resolve();
  private dirty = false;
  private timer: NodeJS.Timeout | undefined;

  private constructor(
    /** Undefined: nothing is persisted. */
    readonly file: string | undefined,
    private readonly options: DataOptions,
    private readonly restored: Record<string, unknown>,
    /** True when the instance started from a saved state. */
    readonly resumed: boolean,
  ) {}

  static async open(file: string | undefined, options: DataOptions): Promise<PersistedState> {
    const saved = file === undefined ? undefined : await readStateFile(file, options);
    return new PersistedState(file, options, saved ?? {}, saved !== undefined);
  }

  /**
   * Registers the section `name`; returns what the previous instance saved under it (undefined on a fresh start).
   * `save` is called at every save, after registration: it may refer to state created from the returned value.
   */
  section<T>(name: string, schema: z.ZodType<T>, save: () => T): T | undefined {
    if (this.savers.has(name)) throw new Error(`emulator state section "${name}" registered twice`);
    this.savers.set(name, save);
    const raw = this.restored[name];
    if (raw === undefined) return undefined;
    const parsed = schema.safeParse(raw);
    if (parsed.success) return parsed.data;
    const issue = parsed.error.issues[0];
    const where = [name, ...(issue?.path ?? [])].join('.');
    throw new EmulatorStateError(
      `the emulator state ${this.file} is unusable: "${where}" ${issue?.message ?? 'is not what this emulator saves'}`,
      {
        hint:
          'it was changed outside the emulator or by another version, and is left untouched: restore it, or delete ' +
          'it to start empty (clients that saved snapshot or request ids from it must then start over)',
      },
    );
  }

  /** Resolves once the state as it is now is on disk. */
  commit(): Promise<void> {
    if (this.file === undefined) return Promise.resolve();
    this.dirty = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.queued ??= this.writing.then(() => {
      this.queued = undefined;
      const save = this.saveNow(this.file as string);
      this.writing = save.catch(() => undefined);
      return save;
    });
    return this.queued;
  }

  /** Saves soon; for changes no client holds an id for. */
  changed(): void {
    if (this.file === undefined) return;
    this.dirty = true;
    if (this.timer || this.queued) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      // A failed background save is retried by the next change or by `flush()`, which reports it.
      this.commit().catch(() => undefined);
    }, DEBOUNCE_MS);
    this.timer.unref();
  }

  /** Saves what is not saved yet (at close). */
  async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.dirty) await this.commit();
    else await (this.queued ?? this.writing);
  }

  private async saveNow(file: string): Promise<void> {
    this.dirty = false;
    // Sections are read now, synchronously: a change made while the bytes are written goes to the next save.
    const sections: Record<string, unknown> = { ...this.restored };
    for (const [name, save] of this.savers) sections[name] = save();
    try {
      await writeStateFile(file, {
        format: STATE_FORMAT,
        version: STATE_VERSION,
        saved_at: new Date().toISOString(),
        options: this.options,
        sections,
      });
    } catch (err) {
      this.dirty = true;
      throw err;
    }
  }
}
