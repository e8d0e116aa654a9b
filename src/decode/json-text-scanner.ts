/**
 * The one piece of JSON every part of the array scanner must get right the same way: where a string ends. A string
 * may span chunks and so may an escape, so its state lives here, shared by every mode of the scanner (json-array.ts)
 * and its element reader (json-array-elements.ts). A base class rather than a helper object: the string walk runs
 * for every key and value, and a method on `this` keeps it a monomorphic call in the scanning loops.
 */
import { BACKSLASH, QUOTE } from './byte-codes.js';
import type { DecodeContext } from './context.js';

/** Strings longer than this are searched with the native `indexOf` rather than byte by byte. */
const SHORT_STRING = 24;

export abstract class JsonTextScanner {
  /** Decompressed offset of the current chunk's first byte. */
  protected offset = 0;
  protected inString = false;
  protected escaped = false;

  constructor(protected readonly ctx: DecodeContext) {}

  /** From just after an opening quote (or inside a string) to just after its closing quote, or `n`. */
  protected string(buf: Buffer, i: number): number {
    const n = buf.length;
    if (this.escaped) {
      this.escaped = false;
      i++;
    }
    // Short strings (most keys and values) are cheaper to walk than to hand to a native search.
    const shortEnd = Math.min(n, i + SHORT_STRING);
    for (; i < shortEnd; i++) {
      const c = buf[i];
      if (c === QUOTE) {
        this.inString = false;
        return i + 1;
      }
      if (c === BACKSLASH) i++;
    }
    if (i > n) {
      // A backslash was the chunk's last byte: the next chunk starts with the escaped byte.
      this.escaped = true;
      this.inString = true;
      return n;
    }
    while (true) {
      const q = buf.indexOf(QUOTE, i);
      const stop = q === -1 ? n : q;
      // An odd run of backslashes before the quote (or the chunk's end) escapes it.
      let k = stop - 1;
      while (k >= i && buf[k] === BACKSLASH) k--;
      const escapedStop = (stop - 1 - k) % 2 === 1;
      if (q === -1) {
        this.escaped = escapedStop;
        this.inString = true;
        return n;
      }
      if (!escapedStop) {
        this.inString = false;
        return q + 1;
      }
      i = q + 1;
    }
  }
}
