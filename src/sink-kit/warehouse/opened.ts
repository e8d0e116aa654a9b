/**
 * What a sink holds between `open()` and `close()` (its context, connections, staging), behind one accessor: a
 * method called before `open()` (or after `close()`) fails with the sink's name instead of on an undefined field.
 */
export class Opened<T> {
  private value: T | undefined;

  constructor(private readonly sink: string) {}

  get(): T {
    if (this.value === undefined) throw new Error(`${this.sink} used before open()`);
    return this.value;
  }

  /** What is held, if anything (close() releases it). */
  peek(): T | undefined {
    return this.value;
  }

  set(value: T): T {
    return (this.value = value);
  }

  /** Hands back what was held and forgets it. */
  take(): T | undefined {
    const value = this.value;
    this.value = undefined;
    return value;
  }
}
