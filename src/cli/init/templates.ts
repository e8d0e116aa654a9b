/**
 * What `sluice init` needs to know per component beyond its zod schema: the example values that make a pipeline
 * run at once against the embedded emulator. Everything else in the written file (the comments, the options left
 * at their defaults, which write modes a sink allows) comes from the registry, so an option added to a schema shows
 * up without a change here. A source or sink registered without an entry here fails test/cli/init.test.ts.
 */

/** A variable a pipeline reads, or that a library it uses reads (the AWS SDK, libpq), for `.env.example`. */
export interface EnvVar {
  name: string;
  /** What to put there; never a real value. */
  about: string;
  /** Read by a library, not referenced in the pipeline: listed commented out. */
  optional?: boolean;
}

export interface SourceTemplate {
  /** The source's options (without `type`), as they are written into the file. */
  options: Record<string, unknown>;
  transforms?: Record<string, unknown>[];
  /** `service.emulator` settings that make the embedded emulator answer quickly (fast emulated time, small data). */
  emulator?: Record<string, unknown>;
  /** Columns that identify a row: the sink merges on them where it can. */
  primaryKey?: string[];
  /** The write mode where the sink cannot merge (or no key is given). */
  write: 'append' | 'replace';
  /** A line about cost, for the file's header. */
  cost?: string;
  /** Files the pipeline reads, written beside it (path relative to the pipeline file → content). */
  files?: Record<string, string>;
}

export interface SinkTemplate {
  /** The sink's options (without `type` and `write`), for a pipeline named `name`. */
  options(name: string): Record<string, unknown>;
  /** Variables beyond the service's, for `.env.example`. */
  env: EnvVar[];
  /** What the sink needs before the pipeline runs, for the file's header. */
  needs?: string;
}

const SAMPLE_JSONL = Array.from(
  { length: 5 },
  (_, i) =>
    JSON.stringify({
      id: i + 1,
      name: `item ${i + 1}`,
      price: { amount: (i + 1) * 2.5, currency: 'USD' },
      tags: [`t${i % 2}`],
      updated_at: `2026-01-0${i + 1}T12:00:00Z`,
    }) + '\n',
).join('');

export const SOURCE_TEMPLATES: Record<string, SourceTemplate> = {
  snapshot: {
    options: {
      dataset_id: 'gd_l1vikfnt1wgvvqz95w',
      filter: { name: 'followers', operator: '>=', value: 100 },
      records_limit: 1000,
      download: { format: 'jsonl', compress: true, batch_size: 1000 },
    },
    transforms: [{ type: 'normalize', preset: 'company_profile' }],
    emulator: { size: 2000, time_scale: 50 },
    primaryKey: ['company_id'],
    write: 'replace',
    cost: 'Each run starts a paid filter job; `records_limit` caps the records it places in the snapshot (and charges).',
  },
  deep_lookup: {
    options: {
      query: 'Find all coffee roasters in Portland with more than 10 employees',
      result_limit: 20,
      max_cost: '$20.00',
    },
    emulator: { time_scale: 50 },
    write: 'append',
    cost: 'Each run triggers a paid request: `max_cost` refuses one whose worst case costs more.',
  },
  serp: {
    options: {
      zone: 'serp_zone',
      queries: ['coffee roasters portland', 'ramen berlin'],
      max_pages: 2,
      rate_limit: '20/s',
    },
    transforms: [{ type: 'normalize', preset: 'serp_organic' }],
    primaryKey: ['query', 'link'],
    write: 'replace',
    cost: 'Each result page is one request through the zone, paid per request.',
  },
  reviews: {
    options: {
      zone: 'serp_zone',
      from_serp: { queries: ['empire state building', 'louvre museum'], refresh_after: '7d' },
      // The service answers a later review page with the place's first page again (docs/service.md §5.4): a second
      // page would be paid for nothing, for every place.
      max_pages: 1,
      rate_limit: '20/s',
    },
    transforms: [{ type: 'normalize', preset: 'reviews' }],
    primaryKey: ['review_id'],
    write: 'replace',
    cost:
      'Each search page and review page is one request through the zone, paid per request: one review page per place ' +
      '(the service repeats the first page for later ones), and the searches only when `from_serp.refresh_after` has ' +
      'passed (their places are kept between runs).',
  },
  datasets: { options: {}, write: 'replace' },
  zone_cost: { options: { zones: ['serp_zone'] }, write: 'replace' },
  countries: { options: {}, write: 'replace' },
  file: {
    options: { paths: ['data'], format: 'jsonl' },
    transforms: [{ type: 'flatten', max_depth: 2 }],
    // Incremental by default: each run loads only the files not loaded before, so appending duplicates nothing.
    write: 'append',
    files: { 'data/sample.jsonl': SAMPLE_JSONL },
  },
};

/** Where a file sink writes: a local directory by default, a bucket when SLUICE_OUTPUT says `s3://…`. */
const FILE_OUTPUT_ENV: EnvVar[] = [
  {
    name: 'SLUICE_OUTPUT',
    about: 'Where the files go: a directory, or s3://bucket/prefix/ (unset: out/<pipeline> beside the pipeline file).',
  },
  { name: 'AWS_ACCESS_KEY_ID', about: 'For s3:// outputs: the access key (or use AWS_PROFILE).', optional: true },
  { name: 'AWS_SECRET_ACCESS_KEY', about: 'For s3:// outputs: its secret.', optional: true },
  { name: 'AWS_REGION', about: 'For s3:// outputs: the bucket’s region.', optional: true },
  {
    name: 'AWS_ENDPOINT_URL_S3',
    about: 'For s3:// outputs on an S3-compatible store (MinIO, R2…): its address.',
    optional: true,
  },
];

export const SINK_TEMPLATES: Record<string, SinkTemplate> = {
  duckdb: { options: (name) => ({ path: 'out/warehouse.duckdb', table: name }), env: [] },
  parquet: { options: (name) => ({ path: `\${SLUICE_OUTPUT:-out/${name}}` }), env: FILE_OUTPUT_ENV },
  jsonl: { options: (name) => ({ path: `\${SLUICE_OUTPUT:-out/${name}}` }), env: FILE_OUTPUT_ENV },
  postgres: {
    options: (name) => ({ url: '${DATABASE_URL:-}', table: name }),
    env: [
      {
        name: 'DATABASE_URL',
        about: 'The PostgreSQL server, e.g. postgres://user@localhost:5432/warehouse (unset: the PG* variables).',
      },
      { name: 'PGHOST', about: 'Without DATABASE_URL: the server’s host (libpq variables).', optional: true },
      { name: 'PGUSER', about: 'Without DATABASE_URL: the user.', optional: true },
      { name: 'PGPASSWORD', about: 'Without DATABASE_URL: the password.', optional: true },
      { name: 'PGDATABASE', about: 'Without DATABASE_URL: the database.', optional: true },
    ],
    needs: 'a PostgreSQL server: set DATABASE_URL (see .env.example)',
  },
  clickhouse: {
    options: (name) => ({ url: '${CLICKHOUSE_URL:-http://localhost:8123}', table: name }),
    env: [
      {
        name: 'CLICKHOUSE_URL',
        about:
          'The ClickHouse server’s HTTP interface with its user and password, e.g. http://sluice:secret@localhost:8123 (unset: http://localhost:8123 as user default).',
      },
    ],
    needs: 'a ClickHouse server: set CLICKHOUSE_URL (see .env.example)',
  },
};

/** The service's variables, for every source that calls it. */
export const SERVICE_ENV: EnvVar[] = [
  {
    name: 'SLUICE_BASE_URL',
    about: 'The service, e.g. https://api.brightdata.com (unset: the embedded emulator, no account needed).',
  },
  { name: 'SLUICE_API_KEY', about: 'Your API key (unset: the emulator’s key). Never logged.' },
];
