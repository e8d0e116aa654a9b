/**
 * What a deep lookup may cost, checked before each paid call (docs/service.md §4.4). Apart from the source's flow
 * (deep-lookup.ts) because the trigger and each enrichment both answer to one `max_cost` for the whole run, and the
 * rule is easier to trust read in one place.
 */
import { SluiceError } from '../core/errors.js';
import type { DeepLookupConfig } from './deep-lookup-schema.js';
import { formatMoney, parseMoney } from './money.js';

/** Published pricing (docs/service.md §4.4): $1.00 per matched record, +$0.05 per extra column per matched record. */
const PRICE_PER_RECORD = 1.0;
export const PRICE_PER_EXTRA_COLUMN = 0.05;

/**
 * Worst case of the whole source before anything is paid: every allowed record matched, and every enrich column
 * filled for each of them. `max_cost` bounds the run, not each call: a trigger that leaves no budget for the
 * enrichment would spend money on a run that then fails. Unknown without result_limit.
 */
export function triggerBound(cfg: DeepLookupConfig): number | undefined {
  if (cfg.result_limit === undefined) return undefined;
  return cfg.result_limit * (PRICE_PER_RECORD + PRICE_PER_EXTRA_COLUMN * cfg.enrich.length);
}

/** Refuses a paid call whose worst case, with what the run has spent, would exceed `max_cost`. */
export function checkBudget(cfg: DeepLookupConfig, bound: number | undefined, spent: number, what: string): void {
  if (!cfg.max_cost) return;
  const max = parseMoney(cfg.max_cost);
  if (bound === undefined)
    throw new SluiceError(`refusing to ${what}: its cost cannot be bounded without result_limit`, {
      hint: 'set source.result_limit, or remove max_cost',
    });
  if (spent + bound > max)
    throw new SluiceError(
      `refusing to ${what}: worst-case cost ${formatMoney(spent + bound)} exceeds max_cost ${cfg.max_cost}`,
      { hint: 'lower result_limit, drop enrich columns, or raise max_cost' },
    );
}
