/**
 * Telling an answer cut short on the way from an answer that is not the service's at all. Both fail `JSON.parse`;
 * only the first is worth asking again (a reset or a proxy ending the transfer early), and only the second means
 * base_url points somewhere else.
 */

/**
 * Why `text` is an incomplete answer — fewer bytes than its Content-Length, or JSON that stops before its last
 * bracket closes — or undefined when it is complete (whatever it is).
 */
export function cutShortJson(text: string, headers: Record<string, string | string[] | undefined>): string | undefined {
  const declared = Number(first(headers['content-length']));
  const got = Buffer.byteLength(text);
  if (Number.isInteger(declared) && declared > got) return `${got} of ${declared} bytes`;
  return endsEarly(text) ? `the JSON stops after ${got} bytes, before its end` : undefined;
}

function first(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

/**
 * True when `text` starts an object or array that it never closes, or stops inside a string: the beginning of
 * some JSON value, cut. Text that closes its brackets and still does not parse is malformed, not cut.
 */
export function endsEarly(text: string): boolean {
  const t = text.trimStart();
  if (!t.startsWith('{') && !t.startsWith('[')) return false;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < t.length; i++) {
    const c = t.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: the next character is escaped
      else if (c === 0x22) inString = false;
      continue;
    }
    if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) depth++;
    else if (c === 0x7d || c === 0x5d) {
      depth--;
      if (depth === 0) return false;
    }
  }
  return inString || depth > 0;
}
