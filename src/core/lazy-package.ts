/**
 * Driver packages loaded when first used rather than when sluice starts. Every run loads the registry of all the
 * sinks, and a pipeline into DuckDB or a file need not pay for the S3, Postgres and ClickHouse clients: ~11 MB of
 * RSS and ~0.12 s of start-up together (`node -e "import('<package>')"` against plain node). The packages loaded
 * this way ship CommonJS, which Node's `import` of them loads too: one copy of each, whichever way it is reached.
 */
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** `name`'s exports, required on the first call. */
export function lazyPackage<T>(name: string): () => T {
  let loaded: T | undefined;
  return () => (loaded ??= require(name) as T);
}
