/**
 * Job listing records: flat text fields, HTML in `job_description_formatted`, objects whose members are all null
 * when the source had nothing (`discovery_input`, `job_poster`, `base_salary`), booleans, and relative time text
 * beside an ISO timestamp (`job_posted_time` / `job_posted_date`).
 */
import type { DatasetFields } from './dataset-fields.js';
import {
  COUNTRIES,
  COUNTRY_WEIGHTS,
  FIRST_NAMES,
  INDUSTRIES,
  JOB_TITLES,
  LAST_NAMES,
  NAME_ADJECTIVES,
} from './dataset-vocab.js';
import { permute24, recordRng } from './record-rng.js';

export const JOB_LISTINGS_ID = 'gd_lj0bs4kd8v2mzq6rt';

export const jobListingFields: DatasetFields = {
  url: { type: 'url', description: 'Job posting URL', required: true },
  job_posting_id: { type: 'text', description: 'Job posting id', required: true },
  job_title: { type: 'text', description: 'Title' },
  company_name: { type: 'text', description: 'Hiring company' },
  company_id: { type: 'text', description: 'Hiring company id' },
  job_location: { type: 'text', description: 'Location text' },
  job_summary: { type: 'text', description: 'Plain-text summary' },
  job_seniority_level: { type: 'text', description: 'Seniority' },
  job_function: { type: 'text', description: 'Function' },
  job_employment_type: { type: 'text', description: 'Employment type' },
  job_industries: { type: 'text', description: 'Industry' },
  job_base_pay_range: { type: 'text', description: 'Pay range text; null when not shown' },
  company_url: { type: 'url', description: 'Company page' },
  job_posted_time: { type: 'text', description: 'Relative time since posting' },
  job_num_applicants: { type: 'number', description: 'Applicants so far' },
  discovery_input: {
    type: 'object',
    description: 'Search options the posting was discovered with',
    fields: { experience_level: 'text', job_type: 'text', remote: 'text', time_range: 'text' },
  },
  apply_link: { type: 'url', description: 'External application link; null for on-site applications' },
  country_code: { type: 'text', description: 'ISO 3166-1 alpha-2 country' },
  title_id: { type: 'text', description: 'Normalised title id' },
  company_logo: { type: 'url', description: 'Company logo' },
  job_posted_date: { type: 'date', description: 'When the posting was published' },
  job_poster: { type: 'object', description: 'Who posted it', fields: { name: 'text', title: 'text', url: 'url' } },
  application_availability: { type: 'boolean', description: 'Still accepting applications' },
  job_description_formatted: { type: 'text', description: 'Description as HTML' },
  base_salary: {
    type: 'object',
    description: 'Salary range',
    fields: { currency: 'text', max_amount: 'number', min_amount: 'number', payment_period: 'text' },
  },
  is_easy_apply: { type: 'boolean', description: 'One-click application' },
  job_skills: { type: 'array', description: 'Skills the posting asks for', items: 'text' },
};

const S_JOB = 21;
const SENIORITY = ['Internship', 'Entry level', 'Associate', 'Mid-Senior level', 'Director', 'Executive'];
const FUNCTIONS = ['Engineering', 'Sales', 'Marketing', 'Finance', 'Health Care Provider', 'Operations', 'Design'];
const EMPLOYMENT = ['Full-time', 'Part-time', 'Contract', 'Temporary', 'Internship'];
const SKILLS = ['SQL', 'Python', 'Excel', 'Negotiation', 'Figma', 'Kubernetes', 'Accounting', 'CRM', 'Java', 'Spanish'];
const POSTED = ['1 hour ago', '5 hours ago', '1 day ago', '3 days ago', '1 week ago', '2 weeks ago', '1 month ago'];
const POSTED_DAYS = [0.04, 0.2, 1, 3, 7, 14, 30];
const CURRENCIES: Record<string, string> = { US: 'USD', GB: 'GBP', DE: 'EUR', FR: 'EUR', IN: 'INR', CA: 'CAD' };
const COLLECTED_AT = Date.UTC(2025, 1, 17, 18);

/** One record: a pure function of (seed, index). */
export function jobListing(seed: number, index: number): Record<string, unknown> {
  const r = recordRng(seed, S_JOB, index);
  const id = String(4_000_000_000 + permute24(index, seed ^ 0x5a5a5a));
  const title = r.pick(JOB_TITLES);
  const [industry, nouns] = r.pick(INDUSTRIES);
  const company = `${r.pick(NAME_ADJECTIVES)} ${r.pick(nouns)}`;
  const companySlug = company.toLowerCase().replaceAll(' ', '-');
  const country = r.weighted(COUNTRIES, COUNTRY_WEIGHTS);
  const [city, region] = r.pick(country.cities);
  const posted = r.int(0, POSTED.length - 1);
  const currency = CURRENCIES[country.code];
  const paid = currency !== undefined && r.bool(0.5);
  const min = paid ? r.int(30, 150) * 1000 : null;
  const max = min === null ? null : min + r.int(5, 60) * 1000;
  const summary = `${company} is hiring a ${title} in ${city}. You will work with a small team on ${r.pick(SKILLS)} and ${r.pick(SKILLS)} projects, report to the head of ${r.pick(FUNCTIONS).toLowerCase()}, and help us grow in ${industry.toLowerCase()}.`;
  const poster = r.bool(0.3);
  const posterName = `${r.pick(FIRST_NAMES)} ${r.pick(LAST_NAMES)}`;
  return {
    url: `https://jobs.profilehub.example/view/${title.toLowerCase().replaceAll(' ', '-')}-at-${companySlug}-${id}`,
    job_posting_id: id,
    job_title: title,
    company_name: company,
    company_id: String(10_000 + r.int(0, 9_999_999)),
    job_location: `${city}, ${region}, ${country.code}`,
    job_summary: summary,
    job_seniority_level: r.pick(SENIORITY),
    job_function: r.pick(FUNCTIONS),
    job_employment_type: r.pick(EMPLOYMENT),
    job_industries: industry,
    job_base_pay_range: paid ? `${currency}${min}/yr - ${currency}${max}/yr` : null,
    company_url: `https://www.profilehub.example/company/${companySlug}`,
    job_posted_time: POSTED[posted],
    job_num_applicants: r.logInt(0, 2.6),
    discovery_input: { experience_level: null, job_type: null, remote: null, time_range: null },
    apply_link: r.bool(0.4) ? `https://careers.${companySlug.replaceAll('-', '')}.example/apply/${r.alnum(8)}` : null,
    country_code: r.bool(0.9) ? country.code : null,
    title_id: String(r.int(1, 30_000)),
    company_logo: `https://media.profilehub-cdn.example/dms/image/${r.token(22)}/company-logo_100_100/0`,
    job_posted_date: new Date(COLLECTED_AT - (POSTED_DAYS[posted] as number) * 86_400_000).toISOString(),
    job_poster: poster
      ? { name: posterName, title: `Recruiter at ${company}`, url: `https://www.profilehub.example/in/${r.alnum(10)}` }
      : { name: null, title: null, url: null },
    application_availability: r.bool(0.8),
    job_description_formatted: `<section class="description"><p>${summary}</p><ul><li>${r.pick(SKILLS)}</li><li>${r.pick(SKILLS)}</li></ul></section>`,
    base_salary: paid
      ? { currency, max_amount: max, min_amount: min, payment_period: 'yr' }
      : { currency: null, max_amount: null, min_amount: null, payment_period: null },
    is_easy_apply: r.bool(0.35),
    job_skills: Array.from({ length: r.int(0, 4) }, () => r.pick(SKILLS)),
  };
}
