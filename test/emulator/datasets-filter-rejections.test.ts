/**
 * `POST /datasets/filter` over real HTTP: every rejection, in JSON and multipart modes, and when a filter is paid.
 * (Results of filters: datasets-filter.test.ts.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type EmulatorHandle } from '../../src/emulator/server.js';
import { SEED, SIZE } from './datasets-filter-cases.js';
import { COMPANIES, call, filterForm, startJob } from './datasets-harness.js';

let emu: EmulatorHandle;
beforeAll(async () => {
  // Scheduling of 4 emulated seconds passes in 2 real ms.
  emu = await startEmulator({ seed: SEED, size: SIZE, timeScale: 2000 });
});
afterAll(() => emu.close());

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
