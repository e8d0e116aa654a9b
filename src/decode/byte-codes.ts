/**
 * The ASCII bytes the decoders' scanners look for, and the JSON byte classes they test. In one place because every
 * scanner here works on raw bytes (never on decoded text) and must agree on what a delimiter or a space is; each
 * test is a plain comparison, which V8 inlines into the scanning loops.
 */
export const QUOTE = 0x22;
export const BACKSLASH = 0x5c;
export const COMMA = 0x2c;
export const LF = 0x0a;
export const CR = 0x0d;
export const COLON = 0x3a;
export const LBRACE = 0x7b;
export const RBRACE = 0x7d;
export const LBRACKET = 0x5b;
export const RBRACKET = 0x5d;

/** JSON's whitespace: space, line feed, carriage return, tab. */
export function isSpace(c: number): boolean {
  return c === 0x20 || c === LF || c === CR || c === 0x09;
}

/** Where a JSON scalar ends (it cannot hold these bytes unquoted). */
export function isDelimiter(c: number): boolean {
  return c === COMMA || c === RBRACE || c === RBRACKET || isSpace(c);
}

/** Whether byte `c` can begin a JSON value. */
export function startsValue(c: number): boolean {
  return (
    c === LBRACE ||
    c === LBRACKET ||
    c === QUOTE ||
    c === 0x74 /* t */ ||
    c === 0x66 /* f */ ||
    c === 0x6e /* n */ ||
    c === 0x2d /* - */ ||
    (c >= 0x30 && c <= 0x39)
  );
}

/** The kind of JSON value that begins with byte `c`, for messages. */
export function describeValue(c: number): string {
  if (c === LBRACE) return 'an object';
  if (c === LBRACKET) return 'an array';
  if (c === QUOTE) return 'a string';
  if (c === 0x74 || c === 0x66) return 'a boolean';
  if (c === 0x6e) return 'null';
  return 'a number';
}
