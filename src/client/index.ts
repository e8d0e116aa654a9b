export type * from './api.js';
