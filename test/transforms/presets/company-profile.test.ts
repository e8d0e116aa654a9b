import { describe, expect, it } from 'vitest';
import { normalizeTransform } from '../../../src/transforms/normalize.js';
import { COMPANY_PROFILE_COLUMNS } from '../../../src/transforms/presets/company-profile.js';
import { build, companyProfile, run } from '../fixtures.js';

const profiles = () => build(normalizeTransform, { type: 'normalize', preset: 'company_profile' });

const UPDATE_KEYS = [
  'title',
  'text',
  'time',
  'likes_count',
  'comments_count',
  'external_link',
  'images',
  'videos',
  'post_url',
  'post_id',
  'date',
];

describe('normalize company_profile', () => {
  it('timestamps become Dates, counts integers, lists of objects full structs', async () => {
    const { rows, deadLetters } = await run(profiles(), [
      companyProfile({
        timestamp: '2024-12-22T06:43:58.438Z',
        affiliated: [{ title: 'Acme Labs', Links: 'https://a.test' }],
      }),
    ]);
    expect(deadLetters).toEqual([]);
    const r = rows[0]!;
    expect(r.followers).toBe(12345);
    expect(r.employees_in_platform).toBe(321);
    expect(r.founded).toBe(1999);
    expect(r.timestamp).toEqual(new Date('2024-12-22T06:43:58.438Z'));
    expect(r.funding).toEqual({
      last_round_date: new Date('2019-07-10T00:00:00.000Z'),
      last_round_type: 'Series B',
      rounds: 3,
      last_round_raised: null,
    });
    const updates = r.updates as Record<string, unknown>[];
    expect(updates.map((u) => Object.keys(u))).toEqual([UPDATE_KEYS, UPDATE_KEYS]);
    expect(updates[0]).toMatchObject({ likes_count: 1234, comments_count: 12, external_link: null, videos: null });
    expect(updates[0]!.date).toEqual(new Date('2025-01-02T03:04:05.000Z'));
    expect(updates[1]).toMatchObject({ likes_count: null, comments_count: null, images: null, videos: [], date: null });
    expect(r.employees).toEqual([
      {
        img: 'https://img.example.test/e1.png',
        link: 'https://social.example.test/in/e1',
        subtitle: 'CEO',
        title: 'Ada',
      },
      { img: null, link: 'https://social.example.test/in/e2', subtitle: null, title: 'Bob' },
    ]);
    expect((r.similar as Record<string, unknown>[])[1]).toEqual({
      Links: 'https://social.example.test/company/third',
      subtitle: 'Retail',
      title: 'Third Co',
      location: null,
    });
    expect(r.affiliated).toEqual([{ Links: 'https://a.test', subtitle: null, title: 'Acme Labs', location: null }]);
    expect(r._raw_values).toBeNull();
  });

  it('odd and missing fields: nulls, present spec fields, originals kept in _raw_values by path', async () => {
    const odd = companyProfile({
      followers: '1.2K',
      employees_in_platform: 'about fifty',
      founded: '2015',
      company_id: 164197,
      funding: { last_round_date: 'last spring', rounds: '2', last_round_raised: 'US$ 5M' },
      updates: [{ text: 'x', likes_count: 'lots', comments_count: '1,002' }, 'not an object'],
      locations: '5 Main St',
    });
    delete odd.specialties;
    delete odd.stock_info;
    delete odd.slogan;
    delete odd.get_directions_url;
    const { rows } = await run(profiles(), [odd]);
    const r = rows[0]!;
    expect(r).toMatchObject({
      followers: 1200,
      employees_in_platform: null,
      founded: 2015,
      company_id: '164197',
      specialties: null,
      stock_info: null,
      slogan: null,
      get_directions_url: null,
      locations: ['5 Main St'],
    });
    expect(r.funding).toEqual({ last_round_date: null, last_round_type: null, rounds: 2, last_round_raised: 'US$ 5M' });
    expect((r.updates as Record<string, unknown>[]).map((u) => [u.likes_count, u.comments_count])).toEqual([
      [null, 1002],
    ]);
    expect(r._raw_values).toEqual({
      employees_in_platform: 'about fifty',
      'funding.last_round_date': 'last spring',
      'updates[0].likes_count': 'lots',
      'updates[1]': 'not an object',
    });
  });

  it('a minimal record gets every spec field, and branded employee counts are integers too', async () => {
    const { rows } = await run(profiles(), [{ id: 'bare', employees_in_network: '4,321' }]);
    const r = rows[0]!;
    expect(r).toMatchObject({
      id: 'bare',
      name: null,
      followers: null,
      employees_in_platform: null,
      employees_in_network: 4321,
      funding: null,
      updates: null,
      employees: null,
      similar: null,
      affiliated: null,
      investors: null,
      input: { url: null },
    });
    for (const k of ['about', 'registry_url', 'specialties', 'stock_info', 'get_directions_url', 'formatted_locations'])
      expect(r).toHaveProperty(k, null);
  });

  it('keeps fields the spec does not list', async () => {
    const { rows } = await run(profiles(), [companyProfile({ alumni: null, extra_block: { a: 1 } })]);
    expect(rows[0]).toMatchObject({ alumni: null, extra_block: { a: 1 } });
  });

  it('lays every row out the same: the declared columns in their order, then the fields the spec does not list', async () => {
    const declared = COMPANY_PROFILE_COLUMNS.map((c) => c.name);
    // Two records whose fields come in different orders, one with a field nobody declared.
    const { rows } = await run(profiles(), [
      { timestamp: '2024-12-22T06:43:58.438Z', crunchbase_url: 'https://c.test', name: 'B', id: 'b' },
      { id: 'a', name: 'A', followers: 5 },
    ]);
    expect(Object.keys(rows[0]!)).toEqual([...declared, 'crunchbase_url']);
    expect(Object.keys(rows[1]!)).toEqual(declared);
    expect(rows[0]).toMatchObject({ id: 'b', name: 'B', crunchbase_url: 'https://c.test', followers: null });
    expect(rows[1]).toMatchObject({ id: 'a', name: 'A', followers: 5, timestamp: null });
  });

  it('keeps a field named __proto__ as a field, as it came', async () => {
    const record = JSON.parse('{"id":"p","__proto__":{"polluted":true}}') as Record<string, unknown>;
    const { rows } = await run(profiles(), [record]);
    const r = rows[0]!;
    expect(Object.getPrototypeOf(r)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(r, '__proto__')?.value).toEqual({ polluted: true });
    expect((r as { polluted?: unknown }).polluted).toBeUndefined();
  });
});
