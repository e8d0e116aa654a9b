import { describe, expect, it } from 'vitest';
import { didYouMean } from '../../src/core/suggest.js';

describe('didYouMean', () => {
  const commands = ['run', 'validate', 'plan', 'emulator', 'zones', 'datasets', 'dead-letters'];

  it('names the closest candidate for a typo, ignoring case', () => {
    expect(didYouMean('valdate', commands)).toBe('validate');
    expect(didYouMean('Zone', commands)).toBe('zones');
    expect(didYouMean('deadletters', commands)).toBe('dead-letters');
  });

  it('allows one slip in a short word and about one in three letters in a long one', () => {
    expect(didYouMean('rum', commands)).toBe('run');
    expect(didYouMean('rxx', commands)).toBeUndefined();
    expect(didYouMean('emultr', commands)).toBe('emulator');
  });

  it('suggests nothing for a word unlike every candidate, or without candidates', () => {
    expect(didYouMean('transform', commands)).toBeUndefined();
    expect(didYouMean('run', [])).toBeUndefined();
  });
});
