/**
 * Word pools shared by the dataset generators: people, places with a realistic country skew, industries. Plain
 * arrays (no per-record work) so generators only index into them.
 */
import { cumulative } from './record-rng.js';

// prettier-ignore
export const FIRST_NAMES = [
  'James', 'Maria', 'Wei', 'Aisha', 'Lucas', 'Sofia', 'Arjun', 'Emma', 'Mateo', 'Chloe', 'Kenji', 'Fatima',
  'Noah', 'Olga', 'Diego', 'Priya', 'Liam', 'Hana', 'Omar', 'Elena', 'Jonas', 'Amara', 'Tomasz', 'Ines',
  'Daniel', 'Yuki', 'Samuel', 'Leila', 'Pedro', 'Grace', 'Ahmed', 'Clara', 'Victor', 'Mei', 'Rahul', 'Julia',
];

// prettier-ignore
export const LAST_NAMES = [
  'Smith', 'Garcia', 'Chen', 'Okafor', 'Müller', 'Rossi', 'Patel', 'Dubois', 'Tanaka', 'Kowalski', 'Silva',
  'Johnson', 'Nguyen', 'Haddad', 'Lindqvist', 'Novak', 'Kim', 'Walsh', "O'Brien", 'Moreau', 'Schmidt', 'Singh',
  'Costa', 'Ivanova', 'Yamamoto', 'Fischer', 'Mensah', 'Larsen', 'Hernández', 'Cohen', 'Brown', 'Sato',
];

/** [ISO-2 code, weight, cities as [city, region]]: weights skew toward where most companies are registered. */
// prettier-ignore
const COUNTRY_TABLE: [string, number, [string, string][]][] = [
  ['US', 36, [['New York', 'NY'], ['San Francisco', 'CA'], ['Austin', 'TX'], ['Chicago', 'IL'], ['Seattle', 'WA'], ['Boston', 'MA'], ['Denver', 'CO'], ['Atlanta', 'GA']]],
  ['GB', 8, [['London', 'England'], ['Manchester', 'England'], ['Edinburgh', 'Scotland'], ['Bristol', 'England']]],
  ['IN', 7, [['Bengaluru', 'Karnataka'], ['Mumbai', 'Maharashtra'], ['Pune', 'Maharashtra'], ['Hyderabad', 'Telangana']]],
  ['DE', 5, [['Berlin', 'Berlin'], ['Munich', 'Bavaria'], ['Hamburg', 'Hamburg'], ['Frankfurt', 'Hesse']]],
  ['FR', 4, [['Paris', 'Île-de-France'], ['Lyon', 'Auvergne-Rhône-Alpes'], ['Toulouse', 'Occitanie']]],
  ['CA', 4, [['Toronto', 'ON'], ['Vancouver', 'BC'], ['Montreal', 'QC']]],
  ['BR', 4, [['São Paulo', 'SP'], ['Rio de Janeiro', 'RJ'], ['Belo Horizonte', 'MG']]],
  ['AU', 3, [['Sydney', 'NSW'], ['Melbourne', 'VIC'], ['Brisbane', 'QLD']]],
  ['NL', 3, [['Amsterdam', 'North Holland'], ['Rotterdam', 'South Holland'], ['Utrecht', 'Utrecht']]],
  ['ES', 3, [['Madrid', 'Community of Madrid'], ['Barcelona', 'Catalonia'], ['Valencia', 'Valencian Community']]],
  ['IT', 2, [['Milan', 'Lombardy'], ['Rome', 'Lazio'], ['Turin', 'Piedmont']]],
  ['SG', 2, [['Singapore', 'Singapore']]],
  ['SE', 2, [['Stockholm', 'Stockholm County'], ['Gothenburg', 'Västra Götaland']]],
  ['CH', 2, [['Zürich', 'Zurich'], ['Geneva', 'Geneva']]],
  ['IL', 2, [['Tel Aviv', 'Tel Aviv District'], ['Haifa', 'Haifa District']]],
  ['JP', 2, [['Tokyo', 'Tokyo'], ['Osaka', 'Osaka']]],
  ['MX', 2, [['Mexico City', 'CDMX'], ['Monterrey', 'Nuevo León']]],
  ['PL', 1, [['Warsaw', 'Masovian'], ['Kraków', 'Lesser Poland']]],
  ['IE', 1, [['Dublin', 'County Dublin']]],
  ['ZA', 1, [['Cape Town', 'Western Cape'], ['Johannesburg', 'Gauteng']]],
  ['NG', 1, [['Lagos', 'Lagos']]],
  ['AE', 1, [['Dubai', 'Dubai']]],
  ['KR', 1, [['Seoul', 'Seoul']]],
  ['PT', 1, [['Lisbon', 'Lisbon']]],
];

export interface Country {
  code: string;
  cities: readonly (readonly [string, string])[];
}

export const COUNTRIES: readonly Country[] = COUNTRY_TABLE.map(([code, , cities]) => ({ code, cities }));
export const COUNTRY_WEIGHTS: readonly number[] = cumulative(COUNTRY_TABLE.map(([, w]) => w));

// prettier-ignore
export const STREETS = [
  'Market St', 'Main Street', 'Harbor Way', 'Innovation Drive', 'King Street', 'Park Avenue', 'Station Road',
  'Riverside Blvd', 'Oak Lane', 'Commerce Pkwy', 'High Street', 'Canal Street', 'Elm Court', 'Bay Road',
];

/** Industries with the nouns that company names in them tend to use. */
// prettier-ignore
export const INDUSTRIES: readonly (readonly [string, readonly string[], string])[] = [
  ['Software Development', ['Software', 'Labs', 'Systems', 'Technologies'], 'Technology'],
  ['IT Services and IT Consulting', ['Consulting', 'IT Solutions', 'Digital', 'Systems'], 'Technology'],
  ['Financial Services', ['Capital', 'Financial', 'Partners', 'Wealth'], 'Finance'],
  ['Hospitals and Health Care', ['Health', 'Medical Group', 'Care', 'Clinics'], 'Healthcare'],
  ['Food and Beverage Services', ['Foods', 'Kitchen', 'Beverages', 'Provisions'], 'Consumer goods'],
  ['Retail', ['Stores', 'Market', 'Outfitters', 'Goods'], 'Consumer goods'],
  ['Truck Transportation', ['Logistics', 'Freight', 'Transport', 'Lines'], 'Transportation'],
  ['Biotechnology Research', ['Bio', 'Therapeutics', 'Biosciences', 'Genomics'], 'Life sciences'],
  ['Renewable Energy Power Generation', ['Energy', 'Solar', 'Power', 'Renewables'], 'Energy'],
  ['Civil Engineering', ['Engineering', 'Builders', 'Infrastructure', 'Construction'], 'Industrial'],
  ['Higher Education', ['University', 'Institute', 'Academy', 'College'], 'Education'],
  ['Marketing Services', ['Media', 'Creative', 'Agency', 'Studio'], 'Media'],
  ['Real Estate', ['Properties', 'Realty', 'Estates', 'Homes'], 'Real estate'],
  ['Insurance', ['Insurance', 'Assurance', 'Mutual', 'Underwriters'], 'Finance'],
  ['Legal Services', ['Law', 'LLP', 'Legal', 'Advocates'], 'Professional services'],
  ['Manufacturing', ['Industries', 'Manufacturing', 'Works', 'Components'], 'Industrial'],
  ['Telecommunications', ['Telecom', 'Networks', 'Communications', 'Connect'], 'Technology'],
  ['Hospitality', ['Hotels', 'Resorts', 'Hospitality', 'Inns'], 'Travel'],
  ['Non-profit Organizations', ['Foundation', 'Trust', 'Alliance', 'Initiative'], 'Social impact'],
  ['Computer Games', ['Games', 'Interactive', 'Studios', 'Play'], 'Media'],
];

// prettier-ignore
export const NAME_ADJECTIVES = [
  'Blue', 'North', 'Silver', 'Bright', 'Summit', 'Harbor', 'Evergreen', 'Pioneer', 'Golden', 'Atlas', 'Crescent',
  'Granite', 'Redwood', 'Meridian', 'Cobalt', 'Lumen', 'Vertex', 'Horizon', 'Keystone', 'Polar', 'Sterling',
];

export const SYLLABLES = [
  've',
  'lo',
  'tra',
  'qu',
  'an',
  'zen',
  'ix',
  'ora',
  'nex',
  'mi',
  'ka',
  'sol',
  'ri',
  'on',
  'tel',
];

// prettier-ignore
export const JOB_TITLES = [
  'Software Engineer', 'Senior Software Engineer', 'Product Manager', 'Data Scientist', 'Account Executive',
  'Marketing Manager', 'Operations Manager', 'Financial Analyst', 'HR Business Partner', 'Customer Success Manager',
  'Registered Nurse', 'Mechanical Engineer', 'Accountant', 'UX Designer', 'Sales Development Representative',
  'Chief Executive Officer', 'Chief Technology Officer', 'Head of People', 'Supply Chain Analyst', 'Recruiter',
];

export function slugify(text: string): string {
  return text
    .toLowerCase()
    .normalize('NFD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');
}

/** `1557451` → `"1,557,451"` (no regex: it runs per record). */
export function groupThousands(n: number): string {
  const digits = String(n);
  let out = '';
  for (let i = 0; i < digits.length; i++) {
    if (i > 0 && (digits.length - i) % 3 === 0) out += ',';
    out += digits[i];
  }
  return out;
}
