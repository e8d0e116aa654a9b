/** The service writes money as `$` strings ("$73.00"); config takes the same form. */
import { z } from 'zod';

export function parseMoney(text: string): number {
  const m = /^\s*\$?\s*([0-9][0-9,]*(?:\.[0-9]+)?)\s*$/.exec(text);
  if (!m) throw new Error(`"${text}" is not a dollar amount like "$50.00"`);
  return Number(m[1]!.replace(/,/g, ''));
}

export function formatMoney(n: number): string {
  return `$${n.toFixed(2)}`;
}

export const moneySchema = z.string().refine((s) => {
  try {
    parseMoney(s);
    return true;
  } catch {
    return false;
  }
}, 'expected a dollar amount like "$50.00"');
