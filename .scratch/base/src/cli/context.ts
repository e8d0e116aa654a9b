/** Shared by the commands of one CLI invocation. */
import type { CliIo } from './io.js';

export interface CliContext {
  io: CliIo;
  /** Set by a command that finished without throwing but must not exit 0 (`validate` found problems). */
  exitCode: number;
}
