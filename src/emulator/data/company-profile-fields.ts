/**
 * The declared shape of the company profiles dataset: what `GET /datasets/{id}/metadata` answers and what the
 * filter's type rules read. It stands apart from the generator (company-profiles.ts) because the catalogue, the
 * metadata route and the filter need the shape without generating a record, and a field's declaration is read
 * beside the others, not beside the code that fills it.
 */
import type { DatasetFields } from './dataset-fields.js';

const SIMILAR_FIELDS = { Links: 'url', subtitle: 'text', title: 'text', location: 'text' } as const;

/** Field order is the record's key order (and the CSV column order). */
export const companyProfileFields: DatasetFields = {
  input: { type: 'object', description: 'The input the record was collected for', fields: { url: 'url' } },
  id: { type: 'text', description: 'Company handle in profile URLs', required: true },
  name: { type: 'text', description: 'Company name', required: true },
  country_code: { type: 'text', description: 'ISO 3166-1 alpha-2 country of the headquarters' },
  locations: { type: 'array', description: 'Office addresses', items: 'text' },
  followers: { type: 'number', description: 'Followers of the company page' },
  employees_in_platform: { type: 'number', description: 'Employees with a profile on the platform' },
  about: { type: 'text', description: 'About section' },
  specialties: { type: 'text', description: 'Specialties, comma separated; null when absent' },
  company_size: { type: 'text', description: 'Employee count range' },
  organization_type: { type: 'text', description: 'Kind of organisation' },
  industries: { type: 'text', description: 'Industry' },
  website: { type: 'url', description: 'Company website' },
  registry_url: { type: 'url', description: 'Company page on the startup registry' },
  founded: { type: 'number', description: 'Year founded' },
  company_id: { type: 'text', description: 'Numeric company id', required: true },
  employees: {
    type: 'array',
    description: 'Employees shown on the page',
    fields: { img: 'url', link: 'url', subtitle: 'text', title: 'text' },
  },
  headquarters: { type: 'text', description: 'Headquarters city and region' },
  image: { type: 'url', description: 'Cover image' },
  logo: { type: 'url', description: 'Logo image' },
  similar: { type: 'array', description: 'Similar pages', fields: SIMILAR_FIELDS },
  url: { type: 'url', description: 'Company page URL', required: true },
  updates: {
    type: 'array',
    description: 'Recent posts',
    fields: {
      title: 'text',
      text: 'text',
      time: 'text',
      likes_count: 'number',
      comments_count: 'number',
      external_link: 'url',
      images: { array: 'url' },
      videos: { array: 'url' },
    },
  },
  slogan: { type: 'text', description: 'Tagline' },
  affiliated: { type: 'array', description: 'Affiliated pages', fields: SIMILAR_FIELDS },
  investors: { type: 'array', description: 'Investors', items: 'text' },
  funding: {
    type: 'object',
    description: 'Last funding round',
    fields: { last_round_date: 'date', last_round_type: 'text', rounds: 'number' },
  },
  formatted_locations: { type: 'array', description: 'Office addresses, formatted', items: 'text' },
  stock_info: {
    type: 'object',
    description: 'Stock quote of public companies; null when absent',
    fields: {
      id: 'text',
      datetime: 'text',
      stock_exchange: 'text',
      stock_ticker: 'text',
      stock_price: 'text',
      stock_price_change: 'text',
    },
  },
  get_directions_url: { type: 'array', description: 'Map links per location', fields: { directions_url: 'url' } },
  description: { type: 'text', description: 'Page description' },
  sphere: { type: 'text', description: 'Economic sector' },
  type: { type: 'text', description: 'Page type' },
  timestamp: { type: 'date', description: 'When the record was collected' },
};
