/** Zone management (the account-changing calls are `paid`: never retried after they may have reached the service). */
import type { ZonesApi } from './api.js';
import type { HttpCore } from './http.js';

export function zonesApi(http: HttpCore): ZonesApi {
  return {
    create: (body) => http.json({ method: 'POST', path: '/zone', paid: true, json: body }),
    cost: (zone, range) =>
      http.json({ method: 'GET', path: '/zone/cost', query: { zone, from: range?.from, to: range?.to } }),
    refreshIps: (body) => http.json({ method: 'POST', path: '/zone/ips/refresh', paid: true, json: body }),
    removeDomain: (body) => http.json({ method: 'DELETE', path: '/zone/domain_perm', paid: true, json: body }),
    countries: () => http.json({ method: 'GET', path: '/countrieslist' }),
    active: () => http.json({ method: 'GET', path: '/zone/get_active_zones' }),
  };
}
