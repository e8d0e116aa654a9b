/**
 * The one redaction point: secrets registered here are replaced by `***` in every log line, error message, summary,
 * run-history line and dead letter. A process-wide set is deliberate: a secret must never leak through any path,
 * including third-party error text. What is a secret is decided where the config is read (pipeline/secrets.ts);
 * this module only knows how secrets are written inside connection strings.
 */

/** Shorter values would mask ordinary words and numbers everywhere; no real password or key is this short. */
const MIN_LENGTH = 4;

/**
 * `emulator` is the config's word for the embedded emulator (`base_url: emulator`) and the stand-in the commands that
 * need no service give unset variables: masking it would turn "embedded emulator listening" into "embedded ***".
 */
const NEVER_SECRET = new Set(['emulator']);

const secrets = new Set<string>();
/** `secrets`, longest first, so a secret that contains another is masked whole; rebuilt when one is added. */
let ordered: string[] | undefined;

/**
 * Registers `value` as a secret, in every form sluice's output could carry it: as is, JSON-escaped (once, and twice
 * for a JSON line quoting a JSON text), percent-encoded (a URL path or query), and escaped as libpq's quoted `key='value'`.
 */
export function registerSecret(value: string | undefined): void {
  if (!value || value.length < MIN_LENGTH || NEVER_SECRET.has(value)) return;
  const json = JSON.stringify(value).slice(1, -1);
  for (const form of [
    value,
    json,
    JSON.stringify(json).slice(1, -1),
    encodeURIComponent(value),
    new URLSearchParams([['', value]]).toString().slice(1),
    value.replace(/[\\']/g, '\\$&'),
  ])
    if (!secrets.has(form) && form.length >= MIN_LENGTH) {
      secrets.add(form);
      ordered = undefined;
    }
}

export function redact(text: string): string {
  if (secrets.size === 0) return text;
  ordered ??= [...secrets].sort((a, b) => b.length - a.length);
  let out = text;
  for (const s of ordered) if (out.includes(s)) out = out.split(s).join('***');
  return out;
}

/** Registers the credentials a connection string carries (see `connectionSecrets`). */
export function registerConnectionSecrets(text: string): void {
  for (const s of connectionSecrets(text)) registerSecret(s);
}

/**
 * The credentials inside a connection string, in any form sluice is given one:
 * - a URL's userinfo (`postgres://user:PASSWORD@host/db`, `https://user:PASSWORD@host`): the password, raw and
 *   percent-decoded; a userinfo without a password on an http(s) URL is a token (`https://TOKEN@host`);
 * - a URL's `password=` (and `sslpassword=`) query parameter (libpq and the pg driver accept it);
 * - libpq's `key=value` form (`host=h user=u password=PASSWORD dbname=d`, `sslpassword` too), the value bare or
 *   single-quoted with `\'` and `\\` escapes, `=` with or without spaces around it.
 */
export function connectionSecrets(text: string): string[] {
  const found: string[] = [];
  // Up to the authority's last `@`, as URL parsers read it: a password may hold an `@` its writer did not encode.
  for (const m of text.matchAll(/\b([a-z][a-z0-9+.-]*):\/\/([^\s/?#]*)@/gi)) {
    const scheme = m[1]!.toLowerCase();
    const userinfo = m[2]!;
    const colon = userinfo.indexOf(':');
    if (colon >= 0) found.push(...decoded(userinfo.slice(colon + 1)));
    else if (scheme === 'http' || scheme === 'https') found.push(...decoded(userinfo));
  }
  for (const m of text.matchAll(/[?&](?:ssl)?password=([^&#\s]*)/gi)) found.push(...decoded(m[1]!));
  if (isKeyValueConnectionString(text)) {
    const pairs = parseKeyValueConnectionString(text);
    for (const key of ['password', 'sslpassword']) {
      const value = pairs?.get(key);
      if (value !== undefined) found.push(value);
    }
    // Even where the text is not well formed (an unclosed quote), what follows `password=` is taken for the secret.
    for (const m of text.matchAll(/(?:^|\s)(?:ssl)?password\s*=\s*('(?:\\.|[^'\\])*'?|\S+)/gi)) {
      const raw = m[1]!;
      found.push(raw, raw.replace(/^'|'$/g, ''), unquote(raw));
    }
  }
  return [...new Set(found.filter((s) => s.length > 0))];
}

function decoded(s: string): string[] {
  try {
    return [s, decodeURIComponent(s)];
  } catch {
    return [s];
  }
}

function unquote(raw: string): string {
  return raw.replace(/^'|'$/g, '').replace(/\\(.)/g, '$1');
}

/**
 * libpq's `key=value` connection string, as opposed to a URL: `host=db port=5432 dbname=app` — what `psql`,
 * `PG*` tooling and many secret stores hand out. A URL (`postgres://…`, `postgresql://…`) is not one.
 */
export function isKeyValueConnectionString(text: string): boolean {
  return !/^\s*[a-z][a-z0-9+.-]*:\/\//i.test(text) && /^\s*[a-z_]+\s*=/i.test(text);
}

/**
 * Parses libpq's `key=value` form: pairs separated by whitespace, `=` optionally surrounded by spaces, a value
 * either bare (up to the next whitespace; `\` escapes the next character) or single-quoted (`\'` and `\\` inside).
 * Undefined when the text is not well formed (a key without `=`, an unclosed quote).
 */
export function parseKeyValueConnectionString(text: string): Map<string, string> | undefined {
  const out = new Map<string, string>();
  let i = 0;
  const n = text.length;
  const space = (c: string | undefined): boolean => c !== undefined && /\s/.test(c);
  while (true) {
    while (space(text[i])) i++;
    if (i >= n) return out;
    const key = /^[A-Za-z_][A-Za-z0-9_]*/.exec(text.slice(i))?.[0];
    if (key === undefined) return undefined;
    i += key.length;
    while (space(text[i])) i++;
    if (text[i] !== '=') return undefined;
    i++;
    while (space(text[i])) i++;
    let value = '';
    if (text[i] === "'") {
      i++;
      for (;;) {
        if (i >= n) return undefined;
        const c = text[i]!;
        if (c === '\\' && i + 1 < n) {
          value += text[i + 1];
          i += 2;
        } else if (c === "'") {
          i++;
          break;
        } else {
          value += c;
          i++;
        }
      }
    } else {
      while (i < n && !space(text[i])) {
        if (text[i] === '\\' && i + 1 < n) {
          value += text[i + 1];
          i += 2;
        } else value += text[i++];
      }
    }
    out.set(key.toLowerCase(), value);
  }
}
