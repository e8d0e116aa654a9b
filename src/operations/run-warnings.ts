/**
 * The warnings of a run, kept for its line in the run history (`sluice runs` shows them): a warning seen only on a
 * terminal at 3 a.m. is not seen. Bounded: the first few distinct ones, each cut to a line's length.
 */
import type { Logger } from '../core/types.js';

const MAX_WARNINGS = 20;
const MAX_LENGTH = 500;

export class RunWarnings {
  private readonly seen = new Set<string>();
  private more = 0;

  /** `log`, keeping what it warns. */
  wrap(log: Logger): Logger {
    return {
      debug: (m, f) => log.debug(m, f),
      info: (m, f) => log.info(m, f),
      warn: (m, f) => {
        this.add(m);
        log.warn(m, f);
      },
      error: (m, f) => log.error(m, f),
    };
  }

  private add(message: string): void {
    const text = message.length > MAX_LENGTH ? `${message.slice(0, MAX_LENGTH)}…` : message;
    if (this.seen.has(text)) return;
    if (this.seen.size < MAX_WARNINGS) this.seen.add(text);
    else this.more++;
  }

  /** The warnings kept, in the order they were first given, and how many others there were. */
  list(): string[] {
    const list = [...this.seen];
    return this.more > 0 ? [...list, `… and ${this.more} more warning(s)`] : list;
  }
}
