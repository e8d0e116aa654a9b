/**
 * The column facts of a transform that drops rows but never changes one (`filter`, `dedupe`): the columns that come
 * in go out, declared and known alike. One definition, spread into both registry entries, so the two cannot drift
 * apart when the contract's column hooks change.
 */
import type { DeclaredSchema } from '../core/declared.js';
import type { KnownColumns } from '../contracts/component.js';

export const columnsUnchanged = {
  declares: (_config: unknown, input: DeclaredSchema | undefined): DeclaredSchema | undefined => input,
  outputColumns: (_config: unknown, input: KnownColumns | undefined): KnownColumns | undefined => input,
};
