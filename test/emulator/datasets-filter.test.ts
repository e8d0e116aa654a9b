/**
 * `POST /datasets/filter` over real HTTP: results of representative filters (all 14 operators, and/or groups to
 * depth 3, nested fields, combine_nested_fields, CSV and JSON uploads) against an independent evaluation written
 * here as plain predicates over the same generated records; then every rejection.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { companyProfile } from '../../src/emulator/data/company-profiles.js';
import { JOB_LISTINGS_ID, jobListing } from '../../src/emulator/data/job-listings.js';
import { PLACE_REVIEWS_ID, placeReview } from '../../src/emulator/data/place-reviews.js';
import { startEmulator, type EmulatorHandle } from '../../src/emulator/server.js';
import { COMPANIES, call, filterForm, filterRecords, startJob, waitFinal, type Obj } from './datasets-harness.js';

const SEED = 7;
const SIZE = 2000;

let emu: EmulatorHandle;
beforeAll(async () => {
  // Scheduling of 4 emulated seconds passes in 2 real ms.
  emu = await startEmulator({ seed: SEED, size: SIZE, timeScale: 2000 });
});
afterAll(() => emu.close());

const all: Record<string, Obj[]> = {
  [COMPANIES]: Array.from({ length: SIZE }, (_, i) => companyProfile(SEED, i)) as Obj[],
  [PLACE_REVIEWS_ID]: Array.from({ length: SIZE }, (_, i) => placeReview(SEED, i)) as Obj[],
  [JOB_LISTINGS_ID]: Array.from({ length: SIZE }, (_, i) => jobListing(SEED, i)) as Obj[],
};
const ID_FIELD: Record<string, string> = {
  [COMPANIES]: 'id',
  [PLACE_REVIEWS_ID]: 'review_id',
  [JOB_LISTINGS_ID]: 'job_posting_id',
};

const t = (s: string): number => Date.parse(s);
const has = (v: unknown): boolean => v !== null && v !== undefined;

interface Case {
  title: string;
  dataset?: string;
  filter: Obj;
  files?: { name: string; content: string; type?: string }[];
  expect: (r: Obj) => boolean;
}

const CASES: Case[] = [
  { title: '= on text', filter: { name: 'country_code', operator: '=', value: 'DE' }, expect: (r) => r.country_code === 'DE' },
  { title: '!= matches null fields too', filter: { name: 'country_code', operator: '!=', value: 'US' }, expect: (r) => r.country_code !== 'US' },
  { title: '< on a number', filter: { name: 'followers', operator: '<', value: 1000 }, expect: (r) => r.followers < 1000 },
  { title: '<= with a numeric string', filter: { name: 'founded', operator: '<=', value: '1990' }, expect: (r) => has(r.founded) && r.founded <= 1990 },
  { title: '> on a date', filter: { name: 'timestamp', operator: '>', value: '2025-01-20T00:00:00Z' }, expect: (r) => t(r.timestamp) > t('2025-01-20T00:00:00Z') },
  {
    title: '>= on a date inside an object (field:subfield)',
    filter: { name: 'funding:last_round_date', operator: '>=', value: '2020-01-01' },
    expect: (r) => has(r.funding) && t(r.funding.last_round_date) >= t('2020-01-01'),
  },
  { title: '= on a number', filter: { name: 'founded', operator: '=', value: 2001 }, expect: (r) => r.founded === 2001 },
  { title: 'in a list', filter: { name: 'industries', operator: 'in', value: ['Retail', 'Insurance'] }, expect: (r) => ['Retail', 'Insurance'].includes(r.industries) },
  {
    title: 'not_in a list',
    filter: { name: 'organization_type', operator: 'not_in', value: ['Privately Held', 'Public Company'] },
    expect: (r) => !['Privately Held', 'Public Company'].includes(r.organization_type),
  },
  { title: 'includes: substring of text', filter: { name: 'about', operator: 'includes', value: 'sustainably' }, expect: (r) => r.about.includes('sustainably') },
  { title: 'includes: any of a list', filter: { name: 'name', operator: 'includes', value: ['Solar', 'Bio'] }, expect: (r) => r.name.includes('Solar') || r.name.includes('Bio') },
  {
    title: 'not_includes (null text matches)',
    filter: { name: 'specialties', operator: 'not_includes', value: 'Payments' },
    expect: (r) => !(has(r.specialties) && r.specialties.includes('Payments')),
  },
  {
    title: 'includes on array elements (field:value)',
    filter: { name: 'locations:value', operator: 'includes', value: 'Berlin' },
    expect: (r) => r.locations.some((l: string) => l.includes('Berlin')),
  },
  {
    title: 'array_includes',
    filter: { name: 'investors', operator: 'array_includes', value: ['Seedwell', 'Atlas Angels'] },
    expect: (r) => r.investors.some((x: string) => x === 'Seedwell' || x === 'Atlas Angels'),
  },
  {
    title: 'not_array_includes',
    filter: { name: 'investors', operator: 'not_array_includes', value: 'Seedwell' },
    expect: (r) => !r.investors.includes('Seedwell'),
  },
  { title: 'is_null', filter: { name: 'specialties', operator: 'is_null' }, expect: (r) => r.specialties === null },
  { title: 'is_not_null on an object', filter: { name: 'stock_info', operator: 'is_not_null' }, expect: (r) => r.stock_info !== null },
  { title: 'is_null on an empty array', filter: { name: 'investors', operator: 'is_null' }, expect: (r) => r.investors.length === 0 },
  {
    title: 'array of objects (array:subfield)',
    filter: { name: 'similar:subtitle', operator: '=', value: 'Retail' },
    expect: (r) => r.similar.some((s: Obj) => s.subtitle === 'Retail'),
  },
  {
    title: 'optional numbers inside array elements',
    filter: { name: 'updates:likes_count', operator: '>', value: 1000 },
    expect: (r) => r.updates.some((u: Obj) => has(u.likes_count) && u.likes_count > 1000),
  },
  {
    title: 'or group',
    filter: { operator: 'or', filters: [{ name: 'country_code', operator: '=', value: 'FR' }, { name: 'followers', operator: '>=', value: 1_000_000 }] },
    expect: (r) => r.country_code === 'FR' || r.followers >= 1_000_000,
  },
  {
    title: 'groups nested 3 levels',
    filter: {
      operator: 'and',
      filters: [
        {
          operator: 'or',
          filters: [
            { operator: 'and', filters: [{ name: 'country_code', operator: '=', value: 'US' }, { name: 'founded', operator: '>=', value: 2010 }] },
            { name: 'industries', operator: '=', value: 'Retail' },
          ],
        },
        { name: 'website', operator: 'is_not_null' },
      ],
    },
    expect: (r) => ((r.country_code === 'US' && has(r.founded) && r.founded >= 2010) || r.industries === 'Retail') && r.website !== null,
  },
  {
    title: 'combine_nested_fields binds sub-filters to one element',
    filter: {
      operator: 'and',
      combine_nested_fields: true,
      filters: [
        { name: 'similar:subtitle', operator: 'includes', value: 'Services' },
        { name: 'similar:location', operator: 'includes', value: 'New York' },
        { name: 'followers', operator: '>', value: 50 },
      ],
    },
    expect: (r) => r.followers > 50 && r.similar.some((s: Obj) => s.subtitle.includes('Services') && has(s.location) && s.location.includes('New York')),
  },
  {
    title: 'without combine_nested_fields the same sub-filters may hold in different elements',
    filter: {
      operator: 'and',
      filters: [
        { name: 'similar:subtitle', operator: 'includes', value: 'Services' },
        { name: 'similar:location', operator: 'includes', value: 'New York' },
        { name: 'followers', operator: '>', value: 50 },
      ],
    },
    expect: (r) =>
      r.followers > 50 &&
      r.similar.some((s: Obj) => s.subtitle.includes('Services')) &&
      r.similar.some((s: Obj) => has(s.location) && s.location.includes('New York')),
  },
  {
    title: 'CSV upload with in',
    filter: { name: 'country_code', operator: 'in', value: 'countries.csv' },
    files: [{ name: 'countries.csv', content: 'country_code\nUS\r\nDE\n"GB"\n\n' }],
    expect: (r) => ['US', 'DE', 'GB'].includes(r.country_code),
  },
  {
    title: 'JSON upload with not_in',
    filter: { name: 'industries', operator: 'not_in', value: 'industries.json' },
    files: [{ name: 'industries.json', content: JSON.stringify([{ industries: 'Retail' }, { industries: 'Insurance' }]), type: 'application/json' }],
    expect: (r) => !['Retail', 'Insurance'].includes(r.industries),
  },
  {
    title: 'CSV upload for an array (header = the field before the colon), in a group with a literal filter',
    filter: {
      operator: 'and',
      filters: [
        { name: 'locations:value', operator: 'includes', value: 'cities.csv' },
        { name: 'followers', operator: '>=', value: '100' },
      ],
    },
    files: [{ name: 'cities.csv', content: 'locations\nParis\nTokyo\nLisbon\n' }],
    expect: (r) => r.followers >= 100 && r.locations.some((l: string) => ['Paris', 'Tokyo', 'Lisbon'].some((c) => l.includes(c))),
  },
  {
    title: 'reviews: boolean, number and date together',
    dataset: PLACE_REVIEWS_ID,
    filter: {
      operator: 'and',
      filters: [
        { name: 'local_guide', operator: '=', value: true },
        { name: 'review_rating', operator: '<=', value: 2 },
        { name: 'review_date', operator: '<', value: '2024-01-01' },
      ],
    },
    expect: (r) => r.local_guide === true && r.review_rating <= 2 && t(r.review_date) < t('2024-01-01'),
  },
  {
    title: 'reviews: null text, and photos that are null rather than empty',
    dataset: PLACE_REVIEWS_ID,
    filter: { operator: 'or', filters: [{ name: 'review', operator: 'is_null' }, { name: 'photos', operator: 'is_not_null' }] },
    expect: (r) => r.review === null || r.photos !== null,
  },
  {
    title: 'jobs: object subfield number, boolean as text, array_includes',
    dataset: JOB_LISTINGS_ID,
    filter: {
      operator: 'and',
      filters: [
        { name: 'base_salary:min_amount', operator: '>=', value: 60000 },
        { name: 'is_easy_apply', operator: '=', value: 'true' },
        { name: 'job_skills', operator: 'array_includes', value: ['SQL', 'Python'] },
      ],
    },
    expect: (r) =>
      has(r.base_salary.min_amount) &&
      r.base_salary.min_amount >= 60000 &&
      r.is_easy_apply === true &&
      r.job_skills.some((s: string) => s === 'SQL' || s === 'Python'),
  },
  {
    title: 'jobs: JSON upload with in on a text field',
    dataset: JOB_LISTINGS_ID,
    filter: { name: 'job_title', operator: 'in', value: 'titles.json' },
    files: [{ name: 'titles.json', content: JSON.stringify([{ job_title: 'Accountant' }, { job_title: 'Recruiter', extra: 1 }]), type: 'application/json' }],
    expect: (r) => r.job_title === 'Accountant' || r.job_title === 'Recruiter',
  },
]; // prettier-ignore

describe('filter results match an independent evaluation', () => {
  // Concurrent: each case is one job on the same emulator, and jobs run side by side.
  it.concurrent.for(CASES)('$title', async (c, { expect }) => {
    const dataset = c.dataset ?? COMPANIES;
    const idField = ID_FIELD[dataset]!;
    const expected = all[dataset]!.filter(c.expect).map((r) => r[idField]);
    // Each case must discriminate: neither nothing nor everything.
    expect(expected.length).toBeGreaterThan(0);
    expect(expected.length).toBeLessThan(SIZE);
    const request = { dataset_id: dataset, filter: c.filter };
    const got = await filterRecords(emu, request, c.files ? filterForm(c.filter, c.files) : undefined);
    expect(got.map((r) => r[idField])).toEqual(expected);
    // The records are the dataset's records, whole.
    expect(got[0]).toEqual(all[dataset]!.find((r) => r[idField] === expected[0]));
  });

  it('combine_nested_fields changes the result (the two cases above differ)', () => {
    const [combined, loose] = CASES.filter((c) => c.title.includes('combine_nested_fields')).map(
      (c) => all[COMPANIES]!.filter(c.expect).length,
    );
    expect(combined).toBeLessThan(loose!);
  });

  it('records_limit keeps the first matches in dataset order', async () => {
    const filter = { name: 'country_code', operator: '=', value: 'US' };
    const expected = all[COMPANIES]!.filter((r) => r.country_code === 'US')
      .slice(0, 7)
      .map((r) => r.id);
    const got = await filterRecords(emu, { dataset_id: COMPANIES, records_limit: 7, filter });
    expect(got.map((r) => r.id)).toEqual(expected);
  });

  it('records_limit works in multipart mode (query string)', async () => {
    const filter = { name: 'country_code', operator: 'in', value: 'c.csv' };
    const form = filterForm(filter, [{ name: 'c.csv', content: 'country_code\nGB\n' }]);
    const got = await filterRecords(emu, { dataset_id: COMPANIES, records_limit: 3 }, form);
    expect(got.map((r) => r.id)).toEqual(
      all[COMPANIES]!.filter((r) => r.country_code === 'GB')
        .slice(0, 3)
        .map((r) => r.id),
    );
  });

  it('a filter that matches nothing answers 422 up front: no job, nothing charged', async () => {
    const paid = emu.stats.paid.filter ?? 0;
    const listed = (await call(emu, 'GET', `/datasets/snapshots?dataset_id=${COMPANIES}`)).body as Obj[];
    const res = await call(emu, 'POST', '/datasets/filter', {
      json: { dataset_id: COMPANIES, filter: { name: 'name', operator: '=', value: 'No Such Co' } },
    });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ error: 'Provided filter did not match any records' });
    expect(emu.stats.paid.filter ?? 0).toBe(paid);
    expect((await call(emu, 'GET', `/datasets/snapshots?dataset_id=${COMPANIES}`)).body).toHaveLength(listed.length);
  });

  it('under noMatch: failed_snapshot, the job starts and fails with no_records_found instead', async () => {
    const other = await startEmulator({
      seed: SEED,
      size: 200,
      timeScale: 2000,
      datasets: { noMatch: 'failed_snapshot' },
    });
    try {
      const id = await startJob(other, {
        dataset_id: COMPANIES,
        filter: { name: 'name', operator: '=', value: 'No Such Co' },
      });
      const { meta } = await waitFinal(other, id);
      expect(meta).toMatchObject({
        status: 'failed',
        warning: 'Provided filter did not match any records',
        warning_code: 'no_records_found',
      });
      expect(other.stats.recordsCharged).toBe(0);
    } finally {
      await other.close();
    }
  });
});

describe('rejections', () => {
  const filterCall = (json: unknown) => call(emu, 'POST', '/datasets/filter', { json });
  const withFilter = (filter: unknown) => filterCall({ dataset_id: COMPANIES, filter });

  it('reports every schema problem Joi-style in one 400, and charges nothing', async () => {
    const paid = emu.stats.paid.filter ?? 0;
    const res = await filterCall({
      dataset_id: COMPANIES,
      records_limit: 0,
      extra: 1,
      filter: {
        operator: 'and',
        filters: [
          { name: 'country_code', operator: '=', value: 'US', invalid_prop: 1 },
          { name: 'followers', operator: 'between', value: 1 },
          { name: 'specialties', operator: 'is_null', value: 'x' },
          { name: 'founded', operator: '>' },
          { operator: 'xor', filters: [] },
        ],
      },
    });
    expect(res.status).toBe(400);
    expect(res.body.validation_errors).toEqual([
      '"extra" is not allowed',
      '"records_limit" must be a positive number',
      '"filter.filters[0].invalid_prop" is not allowed',
      '"filter.filters[1].operator" must be one of [=, !=, <, <=, >, >=, in, not_in, includes, not_includes, array_includes, not_array_includes, is_null, is_not_null, and, or]',
      '"filter.filters[2].value" is not allowed',
      '"filter.filters[3].value" is required',
      '"filter.filters[4].operator" must be one of [and, or]',
      '"filter.filters[4].filters" must contain at least 1 items',
    ]);
    expect(emu.stats.paid.filter ?? 0).toBe(paid);
  });

  it('allows 3 levels of groups and rejects a 4th', async () => {
    const leaf = { name: 'country_code', operator: '=', value: 'US' };
    const nest = (levels: number): unknown => (levels === 0 ? leaf : { operator: 'and', filters: [nest(levels - 1)] });
    expect((await withFilter(nest(3))).status).toBe(200);
    const res = await withFilter(nest(4));
    expect(res.status).toBe(400);
    expect(res.body.validation_errors).toEqual([
      '"filter.filters[0].filters[0].filters[0]" nests groups 4 levels deep; filter groups nest at most 3 levels',
    ]);
  });

  it('records_limit must be a positive integer', async () => {
    const filter = { name: 'country_code', operator: '=', value: 'US' };
    for (const [limit, message] of [
      [2.5, '"records_limit" must be an integer'],
      [-3, '"records_limit" must be a positive number'],
      ['many', '"records_limit" must be a number'],
    ] as const) {
      const res = await filterCall({ dataset_id: COMPANIES, records_limit: limit, filter });
      expect(res.status).toBe(400);
      expect(res.body.validation_errors).toEqual([message]);
    }
    const form = filterForm(filter, []);
    const res = await call(emu, 'POST', `/datasets/filter?dataset_id=${COMPANIES}&records_limit=0`, { form });
    expect(res.body.validation_errors).toEqual(['"records_limit" must be a positive number']);
  });

  it('requires dataset_id and filter', async () => {
    const res = await filterCall({});
    expect(res.status).toBe(400);
    expect(res.body.validation_errors).toEqual(['"dataset_id" is required', '"filter" is required']);
    const form = new FormData();
    form.set('filter', '{not json');
    const multi = await call(emu, 'POST', '/datasets/filter', { form });
    expect(multi.body.validation_errors).toEqual(['"dataset_id" is required', '"filter" must be valid JSON']);
  });

  it('applies the type rules of the operators', async () => {
    const res = await withFilter({
      operator: 'and',
      filters: [
        { name: 'name', operator: '<', value: 'M' },
        { name: 'followers', operator: 'includes', value: 5 },
        { name: 'name', operator: 'array_includes', value: 'x' },
        { name: 'employees', operator: '=', value: 'x' },
        { name: 'followers', operator: '>', value: 'lots' },
        { name: 'timestamp', operator: '>', value: 'yesterday' },
        { name: 'country_code', operator: '=', value: ['US', 'DE'] },
      ],
    });
    expect(res.status).toBe(400);
    expect(res.body.validation_errors).toEqual([
      '"filter.filters[0].operator" "<" applies to number and date fields; "name" is text',
      '"filter.filters[1].operator" "includes" applies to text and array fields; "followers" is number',
      '"filter.filters[2].operator" "array_includes" applies to array fields; "name" is text',
      '"filter.filters[3].name" "employees" is an array of objects: "=" needs one of its fields, e.g. "employees:title" (only is_null and is_not_null apply to the whole value)',
      '"filter.filters[4].value" must be a number for field "followers" (got "lots")',
      '"filter.filters[5].value" must be a valid date for field "timestamp" (got "yesterday")',
      '"filter.filters[6].value" must be one of [string, number, boolean] for operator "="',
    ]);
  });

  it('Field not found names the field, for top-level and nested names', async () => {
    for (const name of ['revenue', 'employees:age', 'funding:value', 'locations:city']) {
      const res = await withFilter({ name, operator: '=', value: '1' });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatch(new RegExp(`^Field not found: "${name}" \\(filter\\.name\\)`));
    }
  });

  it('File not found when the value names no uploaded file', async () => {
    const filter = { name: 'country_code', operator: 'in', value: 'countries.csv' };
    const form = filterForm(filter, [{ name: 'other.csv', content: 'country_code\nUS\n' }]);
    const multi = await call(emu, 'POST', `/datasets/filter?dataset_id=${COMPANIES}`, { form });
    expect(multi.status).toBe(400);
    expect(multi.body.error).toMatch(
      /^File not found: filter\.value names "countries\.csv" but the uploaded files are "other\.csv"/,
    );
    const json = await withFilter(filter);
    expect(json.status).toBe(400);
    expect(json.body.error).toMatch(/^File not found: .*no file was uploaded/);
  });

  it('Invalid file format for a wrong CSV header or JSON that is not an array of objects', async () => {
    const cases: [{ name: string; content: string }, RegExp][] = [
      [
        { name: 'c.csv', content: 'country\nUS\n' },
        /^Invalid file format: the header of c\.csv is "country"; it must be "country_code"/,
      ],
      [{ name: 'c.csv', content: 'country_code,extra\nUS,1\n' }, /^Invalid file format: the header of c\.csv/],
      [
        { name: 'c.json', content: '{"country_code": "US"}' },
        /^Invalid file format: c\.json must be a JSON array of objects/,
      ],
      [{ name: 'c.json', content: '["US"]' }, /^Invalid file format: item 0 of c\.json is not an object/],
      [
        { name: 'c.json', content: '[{"code": "US"}]' },
        /^Invalid file format: item 0 of c\.json has no key "country_code"/,
      ],
    ];
    for (const [file, message] of cases) {
      const filter = { name: 'country_code', operator: 'in', value: file.name };
      const res = await call(emu, 'POST', `/datasets/filter?dataset_id=${COMPANIES}`, {
        form: filterForm(filter, [file]),
      });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatch(message);
    }
  });

  it('404 for an unknown dataset, in both modes', async () => {
    const filter = { name: 'x', operator: '=', value: '1' };
    const json = await filterCall({ dataset_id: 'gd_nope', filter });
    expect(json.status).toBe(404);
    expect(json.body).toEqual({ error: 'dataset does not exist' });
    const multi = await call(emu, 'POST', '/datasets/filter?dataset_id=gd_nope', { form: filterForm(filter, []) });
    expect(multi.status).toBe(404);
  });

  it('counts a paid filter only when a job starts', async () => {
    const before = emu.stats.paid.filter ?? 0;
    await withFilter({ name: 'nope', operator: '=', value: 1 });
    expect(emu.stats.paid.filter ?? 0).toBe(before);
    await startJob(emu, { dataset_id: COMPANIES, filter: { name: 'followers', operator: '>', value: 0 } });
    expect(emu.stats.paid.filter).toBe(before + 1);
  });
});
