/**
 * The word pools and weights company profiles are drawn from. Kept out of the generator (company-profiles.ts) so
 * that its code reads as the record's structure; the order of every pool is part of the generated data (a pick is
 * an index), so reordering or editing a pool changes every seed's records.
 */
import { cumulative } from './record-rng.js';

export const SIZES = [
  ['2-10 employees', 2, 10],
  ['11-50 employees', 11, 50],
  ['51-200 employees', 51, 200],
  ['201-500 employees', 201, 500],
  ['501-1,000 employees', 501, 1000],
  ['1,001-5,000 employees', 1001, 5000],
  ['5,001-10,000 employees', 5001, 10_000],
  ['10,001+ employees', 10_001, 250_000],
] as const;
export const SIZE_WEIGHTS = cumulative([30, 28, 18, 9, 5, 6, 2, 2]);

export const ORG_TYPES = [
  'Privately Held',
  'Public Company',
  'Self-Employed',
  'Partnership',
  'Nonprofit',
  'Educational',
  'Government Agency',
];
export const ORG_WEIGHTS = cumulative([62, 12, 6, 6, 8, 4, 2]);
export const ROUND_TYPES = [
  'Seed',
  'Series A',
  'Series B',
  'Series C',
  'Series D',
  'Private equity',
  'Post IPO equity',
];
export const EXCHANGES = ['NASDAQ', 'NYSE', 'LSE', 'XETRA', 'Euronext', 'TSX'];
export const SUFFIXES = ['Inc.', 'LLC', 'Ltd', 'GmbH', 'Group', 'Co.', 'S.A.', 'AG', 'Holdings', 'Corp.'];
export const AUDIENCES = [
  'small businesses',
  'enterprise teams',
  'hospitals',
  'families',
  'retailers',
  'developers',
  'public institutions',
  'manufacturers',
  'investors',
  'students',
];
export const GOALS = [
  'grow faster',
  'cut costs without cutting corners',
  'make better decisions with their data',
  'reach new markets',
  'work more sustainably',
  'serve their customers better',
  'stay compliant and secure',
  'build products people love',
];
export const SLOGANS = [
  'Building what comes next',
  'Powering better decisions',
  'Good things, made simply',
  'Your partner in growth',
  'Technology with a human touch',
  'Moving the world forward',
  'Quality you can trust',
  'Designed for people',
  'Where ideas take shape',
  'Making every day healthier',
  'Smarter by design',
  'Delivering on every promise',
];
export const VALUES = [
  'integrity',
  'curiosity',
  'ownership',
  'inclusion',
  'craftsmanship',
  'customer obsession',
  'courage',
];
export const SPECIALTIES = [
  'Cloud Computing',
  'Data Analytics',
  'Supply Chain',
  'Customer Experience',
  'Machine Learning',
  'Cybersecurity',
  'Product Design',
  'Sustainability',
  'E-commerce',
  'Logistics',
  'Consulting',
  'Research',
  'Mobile Apps',
  'Payments',
  'Clinical Trials',
  'Brand Strategy',
];
export const POST_OPENERS = [
  'We are hiring!',
  'Big news:',
  'Thank you to everyone who joined us',
  'Proud moment for the team.',
  'Meet the people behind our work.',
  'Our latest report is out.',
  'Save the date.',
  'What a year it has been.',
];
export const POST_BODIES = [
  'This milestone belongs to our customers and partners, who pushed us to do better every single day.',
  'Join us next month to hear how teams are rethinking the way they plan, build and ship.',
  'We spoke with our engineers about what it takes to build reliable systems at scale.',
  'Our new office opens its doors this week, with room for another hundred colleagues.',
  'Applications are open for our graduate programme, and we would love to hear from you.',
  'A short look back at the projects that shaped our year, and a thank-you to the people who made them happen.',
  'We are committed to cutting our emissions in half by 2030, and here is how we will get there.',
];
export const HASHTAGS = [
  '#hiring',
  '#innovation',
  '#teamwork',
  '#sustainability',
  '#careers',
  '#technology',
  '#growth',
];
export const POST_TIMES = [
  '1d',
  '2d',
  '3d',
  '5d',
  '1w',
  '2w',
  '3w',
  '1mo',
  '2mo',
  '4mo',
  '6mo',
  '1yr',
  '2d Edited',
  '1w Edited',
];
/** Lengths of the nested lists: mostly short, sometimes empty, now and then longer. */
export const COUNTS = [0, 1, 2, 3, 4];
export const LOCATION_WEIGHTS = cumulative([0, 72, 18, 7, 3]);
export const EMPLOYEE_WEIGHTS = cumulative([28, 40, 18, 10, 4]);
export const SIMILAR_WEIGHTS = cumulative([20, 35, 25, 12, 8]);
export const UPDATE_WEIGHTS = cumulative([30, 35, 20, 10, 5]);

export const INVESTORS = [
  'Northgate Ventures',
  'Blue Ridge Capital',
  'Lumen Partners',
  'Seedwell',
  'Harborline Growth',
  'Atlas Angels',
  'Crescent Fund II',
  'Polar Bear Ventures',
];
