/** An error as one line for logs and summaries, with secrets (keys, tokens) masked. */
import { redact } from './redact.js';

export function errorText(err: unknown): string {
  return redact(err instanceof Error ? err.message : String(err));
}
