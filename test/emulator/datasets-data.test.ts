/**
 * The dataset generators without a server: deterministic per (seed, index), unique ids, the spec's company
 * profile shape with its nulls and optional fields, realistic skews, and about 2.9 KB of JSONL per record.
 */
import { describe, expect, it } from 'vitest';
import { companyProfile, companyProfiles } from '../../src/emulator/data/company-profiles.js';
import { DATASETS } from '../../src/emulator/data/datasets-catalogue.js';
import { jobListing } from '../../src/emulator/data/job-listings.js';
import { placeReview, REVIEWS_PER_PLACE } from '../../src/emulator/data/place-reviews.js';

type Obj = Record<string, any>;
const N = 5000;
const companies = [...companyProfiles(11, 0, N)] as Obj[];

const STRING_FIELDS = [
  'about', 'description', 'headquarters', 'industries', 'sphere', 'type', 'organization_type', 'company_size',
  'company_id', 'id', 'name', 'url', 'image', 'logo', 'registry_url',
]; // prettier-ignore

describe('company profiles', () => {
  it('are a pure function of (seed, index)', () => {
    expect(companyProfile(11, 1234)).toEqual(companies[1234]);
    expect(companyProfile(11, 4321)).toEqual(companyProfile(11, 4321));
    expect(companyProfile(12, 1234)).not.toEqual(companies[1234]);
    expect([...companyProfiles(11, 10, 13)]).toEqual(companies.slice(10, 13));
  });

  it('have unique ids and company ids', () => {
    expect(new Set(companies.map((r) => r.id)).size).toBe(N);
    expect(new Set(companies.map((r) => r.company_id)).size).toBe(N);
    expect(new Set([0, 1, 2, 1e6, 2 ** 24, 2 ** 24 + 1].map((i) => companyProfile(1, i).company_id)).size).toBe(6);
  });

  it('carry every field of the spec with its type', () => {
    // A thousand records (expect() calls are the cost here, not generation).
    for (const r of companies.slice(0, 1000)) {
      for (const f of STRING_FIELDS) expect(typeof r[f], f).toBe('string');
      expect(r.country_code === null || /^[A-Z]{2}$/.test(r.country_code)).toBe(true);
      expect(r.website === null || typeof r.website === 'string').toBe(true);
      expect(Number.isInteger(r.followers) && Number.isInteger(r.employees_in_platform)).toBe(true);
      expect(r.founded === null || (Number.isInteger(r.founded) && r.founded >= 1850 && r.founded <= 2024)).toBe(true);
      expect(r.input).toEqual({ url: r.url });
      for (const a of ['affiliated', 'employees', 'similar', 'updates', 'get_directions_url']) expect(Array.isArray(r[a])).toBe(true);
      for (const a of ['formatted_locations', 'locations', 'investors'])
        expect(r[a].every((s: unknown) => typeof s === 'string')).toBe(true);
      for (const e of r.employees) expect(Object.keys(e)).toEqual(['img', 'link', 'subtitle', 'title']);
      for (const s of r.similar) expect(['Links', 'subtitle', 'title', 'location']).toEqual(expect.arrayContaining(Object.keys(s)));
      for (const d of r.get_directions_url) expect(Object.keys(d)).toEqual(['directions_url']);
      if (r.funding !== null) {
        expect(new Date(r.funding.last_round_date).toISOString()).toBe(r.funding.last_round_date);
        expect(typeof r.funding.last_round_type).toBe('string');
        expect(Number.isInteger(r.funding.rounds)).toBe(true);
      }
      for (const u of r.updates) {
        expect(typeof u.title + typeof u.text + typeof u.time).toBe('stringstringstring');
        if ('likes_count' in u) expect(Number.isInteger(u.likes_count) && Number.isInteger(u.comments_count)).toBe(true);
      }
    }
  }); // prettier-ignore

  it('have nulls, optional fields and list lengths that vary', () => {
    const share = (p: (r: Obj) => boolean): number => companies.filter(p).length / N;
    expect(share((r) => r.specialties === null)).toBeGreaterThan(0.2);
    expect(share((r) => r.specialties !== null)).toBeGreaterThan(0.5);
    expect(share((r) => r.stock_info === null)).toBeGreaterThan(0.8);
    expect(share((r) => r.stock_info !== null)).toBeGreaterThan(0.02);
    expect(share((r) => r.funding === null)).toBeGreaterThan(0.3);
    const updates = companies.flatMap((r) => r.updates as Obj[]);
    for (const optional of ['likes_count', 'external_link', 'images', 'videos']) {
      const present = updates.filter((u) => optional in u).length / updates.length;
      expect(present, optional).toBeGreaterThan(0.03);
      expect(present, optional).toBeLessThan(0.95);
    }
    for (const list of ['employees', 'similar', 'updates']) {
      const lengths = new Set(companies.map((r) => r[list].length));
      expect(lengths.has(0) && lengths.has(1) && lengths.has(3), list).toBe(true);
    }
    expect(share((r) => r.similar.some((s: Obj) => !('location' in s)))).toBeGreaterThan(0.1);
  });

  it('skew country codes the way company registries do', () => {
    const counts = new Map<string, number>();
    for (const r of companies) counts.set(r.country_code, (counts.get(r.country_code) ?? 0) + 1);
    const ranked = [...counts.entries()].sort((a, b) => b[1] - a[1]);
    expect(ranked[0]![0]).toBe('US');
    expect(ranked[0]![1] / N).toBeGreaterThan(0.3);
    expect(counts.size).toBeGreaterThan(15);
  });

  it('average about 2.9 KB of JSONL, with a long-ish about text', () => {
    const bytes = companies.reduce((n, r) => n + Buffer.byteLength(JSON.stringify(r)) + 1, 0) / N;
    expect(bytes).toBeGreaterThan(2600);
    expect(bytes).toBeLessThan(3200);
    const about = companies.reduce((n, r) => n + r.about.length, 0) / N;
    expect(about).toBeGreaterThan(250);
  });
});

describe('other datasets', () => {
  it('place reviews: distinct review ids, places repeat in runs, the real shape quirks', () => {
    const reviews = Array.from({ length: 1000 }, (_, i) => placeReview(11, i)) as Obj[];
    expect(new Set(reviews.map((r) => r.review_id)).size).toBe(1000);
    expect(new Set(reviews.map((r) => r.place_id)).size).toBe(1000 / REVIEWS_PER_PLACE);
    expect(
      reviews.every((r) => typeof r.photos_by_reviewer === 'string' && Number.isInteger(r.reviews_by_reviewer)),
    ).toBe(true);
    expect(reviews.some((r) => r.review === null) && reviews.some((r) => r.photos === null)).toBe(true);
    expect(reviews.every((r) => r.review_rating >= 1 && r.review_rating <= 5)).toBe(true);
  });

  it('job listings: distinct posting ids, all-null objects when the source had nothing', () => {
    const jobs = Array.from({ length: 1000 }, (_, i) => jobListing(11, i)) as Obj[];
    expect(new Set(jobs.map((r) => r.job_posting_id)).size).toBe(1000);
    expect(jobs.some((r) => r.base_salary.currency === null) && jobs.some((r) => r.base_salary.currency !== null)).toBe(
      true,
    );
    expect(jobs.every((r) => typeof r.is_easy_apply === 'boolean')).toBe(true);
  });

  it('every dataset record has exactly the declared fields, in order', () => {
    for (const d of DATASETS)
      for (const i of [0, 7, 99]) expect(Object.keys(d.record(11, i))).toEqual(Object.keys(d.fields));
  });
});
