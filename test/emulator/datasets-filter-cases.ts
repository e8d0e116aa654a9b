/**
 * The representative filters of datasets-filter.test.ts (all 14 operators, and/or groups to depth 3, nested fields,
 * combine_nested_fields, CSV and JSON uploads), each with an independent evaluation written as a plain predicate
 * over the same generated records the emulator serves.
 */
import { companyProfile } from '../../src/emulator/data/company-profiles.js';
import { JOB_LISTINGS_ID, jobListing } from '../../src/emulator/data/job-listings.js';
import { PLACE_REVIEWS_ID, placeReview } from '../../src/emulator/data/place-reviews.js';
import { COMPANIES, type Obj } from './datasets-harness.js';

export const SEED = 7;
export const SIZE = 2000;

/** The records of each dataset the emulator started with SEED and SIZE serves. */
export const all: Record<string, Obj[]> = {
  [COMPANIES]: Array.from({ length: SIZE }, (_, i) => companyProfile(SEED, i)) as Obj[],
  [PLACE_REVIEWS_ID]: Array.from({ length: SIZE }, (_, i) => placeReview(SEED, i)) as Obj[],
  [JOB_LISTINGS_ID]: Array.from({ length: SIZE }, (_, i) => jobListing(SEED, i)) as Obj[],
};
export const ID_FIELD: Record<string, string> = {
  [COMPANIES]: 'id',
  [PLACE_REVIEWS_ID]: 'review_id',
  [JOB_LISTINGS_ID]: 'job_posting_id',
};

const t = (s: string): number => Date.parse(s);
const has = (v: unknown): boolean => v !== null && v !== undefined;

export interface Case {
  title: string;
  dataset?: string;
  filter: Obj;
  files?: { name: string; content: string; type?: string }[];
  expect: (r: Obj) => boolean;
}

export const CASES: Case[] = [
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
