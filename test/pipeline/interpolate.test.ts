import { parseDocument } from 'yaml';
import { describe, expect, it } from 'vitest';
import { interpolate, interpolateDocument, InterpolationError } from '../../src/pipeline/interpolate.js';

const env = { NAME: 'sluice', EMPTY: '', PORT: '8080', URL: 'https://api.example.com' };

function failure(text: string): InterpolationError {
  try {
    interpolate(text, env);
  } catch (err) {
    if (err instanceof InterpolationError) return err;
    throw err;
  }
  throw new Error(`expected "${text}" to fail`);
}

describe('interpolate', () => {
  it('replaces ${VAR} with its value, also inside longer text and several times', () => {
    expect(interpolate('${NAME}', env)).toEqual({ value: 'sluice', whole: true, variables: ['NAME'] });
    expect(interpolate('run-${NAME}-${PORT}.log', env)).toEqual({
      value: 'run-sluice-8080.log',
      whole: false,
      variables: ['NAME', 'PORT'],
    });
  });

  it('gives "" for a variable that is set but empty, and fails for one that is unset', () => {
    expect(interpolate('${EMPTY}', env).value).toBe('');
    const err = failure('key: ${MISSING}');
    expect(err.message).toBe('environment variable MISSING is not set');
    expect(err.hint).toContain('${MISSING:-value}');
    expect(err.index).toBe(5);
    expect(err.reference).toBe('${MISSING}');
  });

  it('uses the :- default when the variable is unset or empty, the - default only when unset', () => {
    expect(interpolate('${MISSING:-emulator}', env).value).toBe('emulator');
    expect(interpolate('${EMPTY:-emulator}', env).value).toBe('emulator');
    expect(interpolate('${URL:-emulator}', env).value).toBe('https://api.example.com');
    expect(interpolate('${EMPTY-emulator}', env).value).toBe('');
    expect(interpolate('${MISSING-emulator}', env).value).toBe('emulator');
    expect(interpolate('${MISSING:-}', env).value).toBe('');
  });

  it('keeps colons, dashes and spaces of a default as written', () => {
    expect(interpolate('${MISSING:-http://127.0.0.1:8080/a-b c}', env).value).toBe('http://127.0.0.1:8080/a-b c');
  });

  it('fails with the :? message when the variable is unset or empty', () => {
    expect(failure('${MISSING:?set the API key}').message).toBe('MISSING: set the API key');
    expect(failure('${EMPTY:?must not be empty}').message).toBe('EMPTY: must not be empty');
    expect(failure('${MISSING:?}').message).toBe('MISSING: is not set');
    expect(interpolate('${EMPTY?only when unset}', env).value).toBe('');
    expect(failure('${MISSING?only when unset}').message).toBe('MISSING: only when unset');
    expect(interpolate('${NAME:?never shown}', env).value).toBe('sluice');
  });

  it('reads $${ as a literal ${ and leaves other dollars alone', () => {
    expect(interpolate('$${NAME}', env)).toEqual({ value: '${NAME}', whole: false, variables: [] });
    expect(interpolate('cost $100.00 and $NAME', env).value).toBe('cost $100.00 and $NAME');
    // A `$` before the escape stays: `$` + `$${` → `$` + literal `${`.
    expect(interpolate('$$${NAME}', env).value).toBe('$${NAME}');
    expect(interpolate('trailing $', env).value).toBe('trailing $');
  });

  it('names the variables a value read, also through a default, so a fix line can name the one the file uses', () => {
    expect(interpolate('Bearer ${URL}', env).variables).toEqual(['URL']);
    expect(interpolate('${MISSING:-emulator}', env).variables).toEqual(['MISSING']);
  });

  it('marks only a lone reference as whole', () => {
    expect(interpolate('${PORT:-1}', env).whole).toBe(true);
    expect(interpolate('${PORT}${PORT}', env).whole).toBe(false);
    expect(interpolate(' ${PORT}', env).whole).toBe(false);
    expect(interpolate('plain', env).whole).toBe(false);
  });

  it('rejects malformed references with a hint', () => {
    const open = failure('${NAME');
    expect(open.message).toBe('unterminated `${`: no closing `}`');
    expect(open.hint).toContain('$${');
    expect(failure('${1NAME}').message).toBe('`${1NAME}` is not a valid reference');
    expect(failure('${}').message).toBe('`${}` is not a valid reference');
    expect(failure('${NAME:+alt}').message).toBe('`${NAME:+alt}` is not a valid reference');
  });
});

describe('interpolateDocument', () => {
  it('interpolates values in place, never keys, and records lone references by path', () => {
    const doc = parseDocument('${NAME}: x\nlist: [a, "${PORT}", "p${PORT}"]\nnested: { url: "${URL}", n: 3 }\n');
    const result = interpolateDocument(doc, env);
    expect(result.problems).toEqual([]);
    expect(doc.toJS()).toEqual({
      '${NAME}': 'x',
      list: ['a', '8080', 'p8080'],
      nested: { url: 'https://api.example.com', n: 3 },
    });
    expect([...result.wholeReferences.keys()].sort()).toEqual(['["list",1]', '["nested","url"]']);
  });

  it('collects every failing value with its path instead of stopping at the first', () => {
    const doc = parseDocument('a: ${A}\nb: [ok, "${B:?needed}"]\n');
    const result = interpolateDocument(doc, {});
    expect(result.problems.map((p) => [p.path, p.error.message])).toEqual([
      [['a'], 'environment variable A is not set'],
      [['b', 1], 'B: needed'],
    ]);
  });
});
