/** The service client: `createClient(options)` gives every API area over one connection pool and retry policy. */
import { registerSecret } from '../core/redact.js';
import type { ClientOptions, ServiceClient } from './api.js';
import { datasetsApi } from './datasets.js';
import { deepLookupApi } from './deep-lookup.js';
import { HttpCore } from './http.js';
import { requestApi } from './request.js';
import { zonesApi } from './zones.js';

export type * from './api.js';
export {
  AmbiguousPaidCallError,
  BlockedIpError,
  NotReadyError,
  RateBudgetSpentError,
  ServiceError,
  UnreachableServiceError,
} from './errors.js';
export { pollSnapshot, type PollOptions } from './poll.js';
export { SEARCH_ZONE_TYPES } from './error-codes.js';
export { costPeriodProblem } from './zones.js';
export { FileBudgetPeers, type BudgetPeers } from './shared-budget.js';

export function createClient(options: ClientOptions): ServiceClient {
  // Registered before any request, so no error or log line can carry the key.
  registerSecret(options.apiKey);
  const http = new HttpCore(options);
  return {
    baseUrl: http.baseUrl,
    retryTiming: { baseMs: http.retryPolicy.baseMs, maxMs: http.retryPolicy.maxMs },
    answers429: () => ({ inWindow: http.throttle.count429(), total: http.throttle.answered429 }),
    serviceNow: () => http.clock.now(),
    datasets: datasetsApi(http),
    deepLookup: deepLookupApi(http),
    request: requestApi(http),
    zones: zonesApi(http),
    close: () => http.close(),
  };
}
