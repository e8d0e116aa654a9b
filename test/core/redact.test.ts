/** The one redaction point: connection strings in every form, and a secret in every form text can carry it. */
import { describe, expect, it } from 'vitest';
import {
  connectionSecrets,
  isKeyValueConnectionString,
  parseKeyValueConnectionString,
  redact,
  registerSecret,
} from '../../src/core/redact.js';

describe('connection secrets', () => {
  it('a URL’s password (raw, percent-decoded, with an unencoded @), an http token, a password= parameter', () => {
    expect(connectionSecrets('postgres://app:s%40cr%3At@db:5432/x')).toEqual(['s%40cr%3At', 's@cr:t']);
    expect(connectionSecrets('postgres://app:p@ss@db/x')).toEqual(['p@ss']);
    expect(connectionSecrets('https://tok3n-abc@api.example.com')).toEqual(['tok3n-abc']);
    expect(connectionSecrets('postgres://app@db/x')).toEqual([]);
    expect(connectionSecrets('postgres:///x?host=/run&password=p%20w&sslpassword=k3y')).toEqual([
      'p%20w',
      'p w',
      'k3y',
    ]);
  });

  it('libpq key=value: bare, quoted with escapes, spaces around =, and an unclosed quote', () => {
    expect(parseKeyValueConnectionString("host = db  user=u password='it\\'s a \\\\ pw' dbname=x")).toEqual(
      new Map([
        ['host', 'db'],
        ['user', 'u'],
        ['password', "it's a \\ pw"],
        ['dbname', 'x'],
      ]),
    );
    expect(connectionSecrets('host=db password=b4re!x dbname=x')).toContain('b4re!x');
    expect(connectionSecrets("host=db password='unclosed secret")).toContain('unclosed secret');
    expect(isKeyValueConnectionString('host=db dbname=x')).toBe(true);
    expect(isKeyValueConnectionString('postgres://u@h/db?x=1')).toBe(false);
    expect(parseKeyValueConnectionString('host db')).toBeUndefined();
  });
});

describe('redact', () => {
  it('masks a secret as written, JSON-escaped, percent-encoded and libpq-escaped, the longest first', () => {
    const secret = `rd"x'y\\z w-9kq`;
    registerSecret(secret);
    registerSecret('rd"x');
    for (const form of [
      secret,
      JSON.stringify(secret).slice(1, -1),
      // A JSON line quoting a JSON text (a dead letter's raw record).
      JSON.stringify(JSON.stringify({ v: secret })).slice(1, -1),
      encodeURIComponent(secret),
      new URLSearchParams([['p', secret]]).toString().slice(2),
      secret.replace(/[\\']/g, '\\$&'),
    ])
      expect(redact(`before ${form} after`)).not.toMatch(/rd|9kq/);
    registerSecret('abc'); // too short to be a secret: it would mask ordinary words
    expect(redact('abc')).toBe('abc');
    // The config's word for the embedded emulator, which service-free commands give unset variables: never masked.
    registerSecret('emulator');
    expect(redact('embedded emulator listening')).toBe('embedded emulator listening');
  });
});
