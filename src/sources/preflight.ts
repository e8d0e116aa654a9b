/**
 * The sources' service preflight (Source.preflight): free calls that prove, before anything is paid, that the key
 * is accepted and that what the config names exists. Each failure is a `SluiceError` naming the option and the fix,
 * with the exit code of a configuration error (2): rerunning as it is gives the same.
 */
import {
  BlockedIpError,
  SEARCH_ZONE_TYPES,
  ServiceError,
  UnreachableServiceError,
  type ServiceClient,
} from '../client/index.js';
import { EXIT_CODES, SluiceError } from '../core/errors.js';
import { didYouMean } from '../core/suggest.js';
import type { Logger } from '../core/types.js';

/** A refused key said as such (the call that found out is beside the point), keeping the client's fix line. */
export function keyRefused(err: unknown): unknown {
  if (!(err instanceof ServiceError) || err.status !== 401) return err;
  return new SluiceError(`the service refused the API key (service.api_key): ${err.serviceMessage}`, {
    ...(err.hint !== undefined && { hint: err.hint }),
    cause: err,
    exitCode: err.exitCode,
  });
}

/**
 * The crawl's zone exists in the account and serves search pages. When the zones cannot be listed (a key without
 * permission to list them, a service without the listing, the listing failing) the check is skipped with a warning
 * rather than failing a pipeline that may well work: the first page then tells, the service's code naming the zone
 * and the type it must have (client_10090, client/error-codes.ts), and the crawl ends at that first refusal
 * (crawl/fetcher.ts).
 */
export async function checkSearchZone(client: ServiceClient, zone: string, log: Logger): Promise<void> {
  let zones: { name: string; type: string }[];
  try {
    zones = await client.zones.active();
  } catch (err) {
    if (listingUnavailable(err)) {
      log.warn(
        `cannot list the account's zones (${err.message}): zone "${zone}" is not checked before the run; if it is ` +
          "not a search zone, the first page request fails with the service's code and the crawl stops there",
      );
      return;
    }
    throw keyRefused(err);
  }
  const search = zones.filter((z) => SEARCH_ZONE_TYPES.includes(z.type)).map((z) => z.name);
  const found = zones.find((z) => z.name === zone);
  if (!found) {
    const guess = didYouMean(
      zone,
      zones.map((z) => z.name),
    );
    throw new SluiceError(
      `zone "${zone}" does not exist in this account${guess ? ` (did you mean "${guess}"?)` : ''}`,
      {
        hint: search.length
          ? `set source.zone to one of the account's search zones: ${search.join(', ')}`
          : 'create a search zone (`sluice zones create <name> --yes` makes one of type serp) and set source.zone to it',
        exitCode: EXIT_CODES.config,
      },
    );
  }
  if (!SEARCH_ZONE_TYPES.includes(found.type))
    throw new SluiceError(`zone "${zone}" is of type ${found.type}: it cannot fetch search or review pages`, {
      hint: search.length
        ? `set source.zone to a zone of type ${SEARCH_ZONE_TYPES.join(' or ')}: ${search.join(', ')}`
        : 'create a search zone (`sluice zones create <name> --yes`) and set source.zone to it',
      exitCode: EXIT_CODES.config,
    });
}

/**
 * Whether a failed listing leaves the check to the first real request: any answer of the service but a refused key,
 * and a listing that kept failing after its retries. Not a service out of reach, an IP blocked or a spent 429 budget:
 * every call would fail so.
 */
function listingUnavailable(err: unknown): err is ServiceError {
  return (
    err instanceof ServiceError &&
    err.status !== 401 &&
    !(err instanceof UnreachableServiceError) &&
    !(err instanceof BlockedIpError)
  );
}

/** A dataset's fields as its metadata describes them; undefined when the service has no metadata for it. */
export type DatasetFieldNames = string[] | undefined;

/**
 * The dataset a filter job would run on exists: it is in the service's dataset list (`GET /datasets/list`, free).
 * Its metadata is read too, but only as a hint: the service describes a minority of its datasets (docs/service.md
 * §3.2: 31 of 749), so a 404 there proves nothing. Returns the field names when the metadata answered, for the
 * caller's suggestions; never fails for want of metadata. When the list itself cannot be read (403, 404), the
 * check is skipped with a warning: the filter call will say whether the dataset exists.
 */
export async function checkDataset(client: ServiceClient, datasetId: string, log: Logger): Promise<DatasetFieldNames> {
  let ids: string[];
  try {
    ids = (await client.datasets.list()).map((d) => d.id);
  } catch (err) {
    if (err instanceof ServiceError && (err.status === 403 || err.status === 404)) {
      log.warn(`cannot list the datasets (${err.serviceMessage}): dataset ${datasetId} is not checked before the run`);
      return undefined;
    }
    throw keyRefused(err);
  }
  if (!ids.includes(datasetId)) {
    const guess = didYouMean(datasetId, ids);
    throw new SluiceError(
      `dataset ${datasetId} does not exist: it is not among the ${ids.length} datasets the service lists${guess ? ` (did you mean "${guess}"?)` : ''}`,
      {
        hint: 'check source.dataset_id: `sluice datasets list` shows the ids of the datasets you can filter',
        exitCode: EXIT_CODES.config,
      },
    );
  }
  return client.datasets.metadata(datasetId).then(
    (meta) => Object.keys(meta.fields ?? {}),
    (err: unknown) => {
      if (err instanceof ServiceError && err.status === 401) throw keyRefused(err);
      // 404 for most datasets (no metadata published); anything else: a hint is not worth failing a run for.
      if (!(err instanceof ServiceError && err.status === 404))
        log.debug(`metadata of ${datasetId} unavailable (${(err as Error).message}): field names not checked`);
      return undefined;
    },
  );
}

/**
 * Warns about each field a filter names that the dataset's metadata does not list, with a guess: the metadata is a
 * hint (it may lag the data), so the run goes on and the service has the last word (a 400 "Field not found", free).
 */
export function warnUnknownFields(filterFields: string[], known: string[], log: Logger): void {
  for (const field of new Set(filterFields)) {
    const base = field.split(':')[0]!;
    if (known.includes(base)) continue;
    const guess = didYouMean(base, known);
    log.warn(
      `source.filter names field "${field}", which the dataset's metadata does not list${guess ? ` (did you mean "${guess}"?)` : ''}: the service will refuse the job if the field does not exist`,
    );
  }
}
