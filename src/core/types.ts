/**
 * The contracts every component is written against, in one import. Records flow as async iterables of batches
 * (arrays of plain objects): per-record async overhead is what makes naive streaming slow.
 *
 * An index: each contract lives in its own file — what flows (records.ts), sources (source-contract.ts),
 * transforms (transform-contract.ts), sinks (sink-contract.ts) and what a store can hold (store-limits.ts) — and
 * is exported from here as it always was, so a component imports its contract from one place.
 */
export type * from './records.js';
export type * from './source-contract.js';
export type * from './transform-contract.js';
export type * from './sink-contract.js';
export type * from './store-limits.js';
