/** Zone management (the account-changing calls are `paid`: never retried after they may have reached the service). */
import type { ZonesApi } from './api.js';
import { readText, type HttpCore } from './http.js';

/**
 * Zone types that serve search and review pages through `POST /request`: `serp` (a search zone, docs/service.md
 * §7.1) and `unblocker`. A zone of any other type fails every page with 403 (docs/service.md §8).
 */
export const SEARCH_ZONE_TYPES: readonly string[] = ['serp', 'unblocker'];

export function zonesApi(http: HttpCore): ZonesApi {
  return {
    // The success body is undocumented (docs/service.md §7.1: older docs show 201 "Zone added", newer ones JSON). A zone
    // that was created must not be reported as an error because its answer was plain text.
    create: (body) =>
      http.call({ method: 'POST', path: '/zone', paid: true, json: body }, async (res) => {
        const text = (await readText(res.body, Infinity)).trim();
        if (text === '') return undefined;
        try {
          return JSON.parse(text) as unknown;
        } catch {
          return text;
        }
      }),
    cost: (zone, range) =>
      http.json({ method: 'GET', path: '/zone/cost', query: { zone, from: range?.from, to: range?.to } }),
    refreshIps: (body) => http.json({ method: 'POST', path: '/zone/ips/refresh', paid: true, json: body }),
    removeDomain: (body) => http.json({ method: 'DELETE', path: '/zone/domain_perm', paid: true, json: body }),
    countries: () => http.json({ method: 'GET', path: '/countrieslist' }),
    active: () => http.json({ method: 'GET', path: '/zone/get_active_zones' }),
  };
}
