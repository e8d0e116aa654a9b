/** Runs async sections one at a time, in call order. A failed section does not poison the ones after it. */
export class Mutex {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(fn: () => Promise<T>): Promise<T> {
    const result = this.tail.then(fn, fn);
    this.tail = result.catch(() => undefined);
    return result;
  }
}

/** One `Mutex` per key, created on first use. */
export class KeyedMutex {
  private readonly locks = new Map<string, Mutex>();

  run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    let m = this.locks.get(key);
    if (!m) this.locks.set(key, (m = new Mutex()));
    return m.run(fn);
  }
}
