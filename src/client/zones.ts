/** Zone management (the account-changing calls are `paid`: never retried after they may have reached the service). */
import { EXIT_CODES } from '../core/errors.js';
import type { ZonesApi } from './api.js';
import { ServiceError } from './errors.js';
import type { HttpCore } from './http.js';

export function zonesApi(http: HttpCore): ZonesApi {
  return {
    // The success body is undocumented (docs/service.md §7.1: older docs show 201 "Zone added", newer ones JSON). A zone
    // that was created must not be reported as an error because its answer was plain text.
    create: (body) => {
      const call = { method: 'POST' as const, path: '/zone', paid: true, bills: 'zone_create' as const, json: body };
      return http.call(call, async (res) => {
        const text = (await http.answerText(call, res)).trim();
        if (text === '') return undefined;
        try {
          return JSON.parse(text) as unknown;
        } catch {
          return text;
        }
      });
    },
    cost: (zone, range) =>
      http.json({
        method: 'GET',
        path: '/zone/cost',
        query: { zone, from: range?.from, to: range?.to },
        classify: badPeriod,
      }),
    refreshIps: (body) =>
      http.json({ method: 'POST', path: '/zone/ips/refresh', paid: true, bills: 'ip_refresh', json: body }),
    removeDomain: (body) =>
      http.json({ method: 'DELETE', path: '/zone/domain_perm', paid: true, bills: 'domain_perm', json: body }),
    countries: () => http.json({ method: 'GET', path: '/countrieslist' }),
    active: () => http.json({ method: 'GET', path: '/zone/get_active_zones' }),
  };
}

/**
 * What is wrong with a cost period, or undefined: both ends real calendar days written `YYYY-MM-DD`, `from` not after
 * `to`. The service answers an impossible day with a 500 (docs/service.md §7.2), so it is checked before asking.
 */
export function costPeriodProblem(from: string, to: string): string | undefined {
  for (const [name, day] of [
    ['from', from],
    ['to', to],
  ] as const)
    if (!isCalendarDay(day)) return `${name} "${day}" is not a calendar day written YYYY-MM-DD`;
  return from > to ? `from ${from} is after to ${to} (from is inclusive, to exclusive)` : undefined;
}

function isCalendarDay(s: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(s)) return false;
  const t = Date.parse(`${s}T00:00:00Z`);
  return !Number.isNaN(t) && new Date(t).toISOString().slice(0, 10) === s;
}

/**
 * The cost report's answer to a period it cannot read: 500 with "You must provide period with both to and from"
 * (docs/service.md §7.2), though both were sent. It is the request's dates, not the service failing: not retried,
 * and said as a configuration error.
 */
function badPeriod(err: ServiceError): ServiceError {
  if (err.status !== 500 || !/provide period with both to and from/i.test(err.serviceMessage)) return err;
  return new ServiceError({
    method: err.method,
    path: err.path,
    status: err.status,
    serviceMessage: `${err.serviceMessage} (the service's answer to a period it cannot read)`,
    transient: false,
    exitCode: EXIT_CODES.config,
    hint: 'from and to must be real calendar days written YYYY-MM-DD, from before to',
  });
}
