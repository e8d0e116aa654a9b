import { afterEach, describe, expect, it, vi } from 'vitest';
import { SluiceError } from '../../src/core/errors.js';
import { FAILPOINTS, FAILPOINTS_ENV, parseFailpoints } from '../../src/core/failpoints.js';

describe('parseFailpoints', () => {
  it('reads name[=N] items, the count defaulting to the first hit', () => {
    const armed = parseFailpoints(' duckdb:after-data=3, files:after-rename ,');
    expect(Object.fromEntries(armed!)).toEqual({
      'duckdb:after-data': { at: 3, hits: 0 },
      'files:after-rename': { at: 1, hits: 0 },
    });
    expect(parseFailpoints(undefined)).toBeUndefined();
    expect(parseFailpoints('  ')).toBeUndefined();
  });

  it('refuses an unknown name or a count of zero, saying what is allowed', () => {
    expect(() => parseFailpoints('duckdb:after-dat=2')).toThrow(/"duckdb:after-dat=2" is not a failpoint/);
    let refused: unknown;
    try {
      parseFailpoints('nope');
    } catch (err) {
      refused = err;
    }
    expect(refused).toBeInstanceOf(SluiceError);
    expect((refused as SluiceError).hint).toContain(Object.keys(FAILPOINTS)[0]);
    expect(() => parseFailpoints('duckdb:after-data=0')).toThrow(/the count starts at 1/);
  });
});

describe('failpoint', () => {
  afterEach(() => {
    delete process.env[FAILPOINTS_ENV];
    vi.restoreAllMocks();
    vi.resetModules();
  });

  /** The module as a process started with `spec` in the environment loads it, with the kill intercepted. */
  async function armedWith(spec: string | undefined) {
    if (spec === undefined) delete process.env[FAILPOINTS_ENV];
    else process.env[FAILPOINTS_ENV] = spec;
    vi.resetModules();
    const kill = vi.spyOn(process, 'kill').mockImplementation(() => true);
    vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    const mod = await import('../../src/core/failpoints.js');
    return { failpoint: mod.failpoint, kill };
  }

  it('kills the process with SIGKILL on the N-th hit of a counted failpoint, not before', async () => {
    const { failpoint, kill } = await armedWith('engine:after-commit=3');
    failpoint('engine:after-commit');
    failpoint('engine:after-commit');
    failpoint('duckdb:after-data');
    expect(kill).not.toHaveBeenCalled();
    failpoint('engine:after-commit');
    expect(kill).toHaveBeenCalledWith(process.pid, 'SIGKILL');
  });

  it('kills once an amount reaches N, for failpoints called with one', async () => {
    const { failpoint, kill } = await armedWith('download:body=1000');
    failpoint('download:body', 999);
    expect(kill).not.toHaveBeenCalled();
    failpoint('download:body', 1500);
    expect(kill).toHaveBeenCalledTimes(1);
  });

  it('does nothing when the variable is unset', async () => {
    const { failpoint, kill } = await armedWith(undefined);
    for (const name of Object.keys(FAILPOINTS)) failpoint(name as keyof typeof FAILPOINTS, 1e12);
    expect(kill).not.toHaveBeenCalled();
  });
});
