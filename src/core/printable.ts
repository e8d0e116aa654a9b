/**
 * Text from data or from the service made safe to print on a terminal or in a line-based log: control characters
 * are written as escapes, so a value cannot start a line of its own (a forged `error:` line), move the cursor back
 * over what was printed (CR), or send the terminal a command (ESC: clear the screen, set the title, …). Bidirectional
 * overrides are escaped too: they reorder what a reader sees.
 */

/** C0 controls (tab kept), DEL, C1 controls, and the bidirectional embeddings, overrides and isolates. */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const UNPRINTABLE = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069\u2028\u2029]/g;

const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r' };

/** Escapes JSON reads back as the same character, so a JSON line stays valid JSON (and means the same) once escaped. */
function escape(c: string): string {
  return NAMED[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
}

/** `text` as one printable line: every control character escaped, newlines included. */
export function printableLine(text: string): string {
  return text.replace(UNPRINTABLE, escape);
}

/** `text` printable, its line breaks kept (a stack trace, several lines written on purpose). */
export function printableLines(text: string): string {
  return text.split('\n').map(printableLine).join('\n');
}
