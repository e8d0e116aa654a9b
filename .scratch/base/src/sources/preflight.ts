/**
 * The sources' service preflight (Source.preflight): free calls that prove, before anything is paid, that the key
 * is accepted and that what the config names exists. Each failure is a `SluiceError` naming the option and the fix.
 */
import { SEARCH_ZONE_TYPES, ServiceError, type ServiceClient } from '../client/index.js';
import { SluiceError } from '../core/errors.js';
import { didYouMean } from '../core/suggest.js';
import type { Logger } from '../core/types.js';

/** A refused key said as such (the call that found out is beside the point), keeping the client's fix line. */
export function keyRefused(err: unknown): unknown {
  if (!(err instanceof ServiceError) || err.status !== 401) return err;
  return new SluiceError(`the service refused the API key (service.api_key): ${err.serviceMessage}`, {
    ...(err.hint !== undefined && { hint: err.hint }),
    cause: err,
  });
}

/**
 * The crawl's zone exists in the account and serves search pages. When the zones cannot be listed (403, 404) the
 * check is skipped with a warning rather than failing a pipeline that may well work.
 */
export async function checkSearchZone(client: ServiceClient, zone: string, log: Logger): Promise<void> {
  let zones: { name: string; type: string }[];
  try {
    zones = await client.zones.active();
  } catch (err) {
    // 403: a key without permission to list zones; 404: a service without the listing. Neither says the zone is
    // wrong, and the pipeline may well work.
    if (err instanceof ServiceError && (err.status === 403 || err.status === 404)) {
      log.warn(`cannot list the account's zones (${err.serviceMessage}): zone "${zone}" is not checked before the run`);
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
      },
    );
  }
  if (!SEARCH_ZONE_TYPES.includes(found.type))
    throw new SluiceError(`zone "${zone}" is of type ${found.type}: it cannot fetch search or review pages`, {
      hint: search.length
        ? `set source.zone to a zone of type ${SEARCH_ZONE_TYPES.join(' or ')}: ${search.join(', ')}`
        : 'create a search zone (`sluice zones create <name> --yes`) and set source.zone to it',
    });
}

/** The dataset a filter job would run on exists (its metadata is free to read). */
export async function checkDataset(client: ServiceClient, datasetId: string): Promise<void> {
  await client.datasets.metadata(datasetId).catch((err: unknown) => {
    if (err instanceof ServiceError && err.status === 404)
      throw new SluiceError(`dataset ${datasetId} does not exist (${err.message})`, {
        hint: 'check source.dataset_id: `sluice datasets list` shows the ids of the datasets you can filter',
        cause: err,
      });
    throw keyRefused(err);
  });
}
