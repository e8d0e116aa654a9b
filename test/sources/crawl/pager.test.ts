import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  knowledgeFids,
  nextReviewsPage,
  nextSerpPage,
  organicCount,
  parseReviewsUnitId,
  parseSerpUnitId,
  readQueriesFile,
  reviewsUnitId,
  serpUnitId,
  uniqueQueries,
} from '../../../src/sources/crawl/pager.js';

const items = (n: number, prefix = 'https://example.test/'): { link: string }[] =>
  Array.from({ length: n }, (_, i) => ({ link: `${prefix}${i}` }));

describe('nextSerpPage', () => {
  it('follows next_page_start, whatever the page size', () => {
    const page = { organic: items(7), pagination: { next_page_start: 7, next_page_link: 'https://g/search?start=99' } };
    expect(nextSerpPage(page, 0, 1, 5)).toEqual({ next: 7 });
  });

  it('falls back to start= of next_page_link', () => {
    const page = { organic: items(4), pagination: { next_page: 3, next_page_link: '/search?q=x&start=23&sa=N' } };
    expect(nextSerpPage(page, 13, 2, 5)).toEqual({ next: 23 });
  });

  it('uses the pages[] entry, then the result count, when only next_page is given', () => {
    const withPages = { organic: items(9), pagination: { next_page: 2, pages: [{ page: 2, start: 9 }] } };
    expect(nextSerpPage(withPages, 0, 1, 5)).toEqual({ next: 9 });
    const bare = { organic: items(8), oragnic: items(3, 'https://other.test/'), pagination: { next_page: 2 } };
    expect(nextSerpPage(bare, 0, 1, 5)).toEqual({ next: 11 });
  });

  it('stops at the last page, an empty page, max_pages, and a page that does not move forward', () => {
    expect(nextSerpPage({ organic: items(3), pagination: { current_page: 4 } }, 30, 4, 10)).toEqual({
      stop: 'last_page',
    });
    expect(nextSerpPage({ organic: [], pagination: { next_page_start: 10 } }, 0, 1, 10)).toEqual({
      stop: 'empty_page',
    });
    expect(nextSerpPage({ organic: items(10), pagination: { next_page_start: 50 } }, 40, 5, 5)).toEqual({
      stop: 'max_pages',
    });
    expect(nextSerpPage({ organic: items(10), pagination: { next_page_start: 10 } }, 10, 2, 5)).toEqual({
      stop: 'no_progress',
    });
  });

  it('counts organic and oragnic results once each', () => {
    expect(organicCount({ organic: items(5), oragnic: items(7) })).toBe(7);
  });
});

describe('nextReviewsPage', () => {
  it('advances by the reviews on the page and stops on a short or empty page or at max_pages', () => {
    expect(nextReviewsPage(8, 0, 1, 10, 8)).toEqual({ next: 8 });
    expect(nextReviewsPage(8, 8, 2, 10, 8)).toEqual({ next: 16 });
    expect(nextReviewsPage(5, 16, 3, 10, 8)).toEqual({ stop: 'short_page' });
    expect(nextReviewsPage(0, 24, 4, 10, 8)).toEqual({ stop: 'empty_page' });
    expect(nextReviewsPage(8, 72, 10, 10, 8)).toEqual({ stop: 'max_pages' });
  });
});

describe('unit ids', () => {
  it('round-trips queries with separators and unicode', () => {
    for (const q of ['coffee roasters portland', 'a:b:start:3', 'café & crème/100%', '']) {
      const id = serpUnitId('www.google.com', q, 20);
      expect(id).toMatch(/^serp:www\.google\.com:[^:]*:start:20$/);
      expect(parseSerpUnitId(id)).toEqual({ host: 'www.google.com', query: q, start: 20 });
    }
    expect(parseSerpUnitId(serpUnitId('localhost:8080', 'x', 0))).toEqual({
      host: 'localhost:8080',
      query: 'x',
      start: 0,
    });
  });

  it('keeps the fid as it is in review unit ids', () => {
    const fid = '0x89c259a9b3117469:0xd134e199a405a163';
    expect(reviewsUnitId(fid, 10)).toBe(`reviews:${fid}:start:10`);
    expect(parseReviewsUnitId(reviewsUnitId(fid, 10))).toEqual({ fid, start: 10 });
  });
});

describe('knowledgeFids', () => {
  it('reads knowledge.fid from one panel or several', () => {
    expect(knowledgeFids({ knowledge: { fid: '0x1:0x2' } })).toEqual(['0x1:0x2']);
    expect(knowledgeFids({ knowledge: [{ fid: '0x1:0x2' }, { title: 'x' }, { fid: '0x3:0x4' }] })).toEqual([
      '0x1:0x2',
      '0x3:0x4',
    ]);
    expect(knowledgeFids({ organic: [] })).toEqual([]);
  });
});

describe('readQueriesFile', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-'));

  it('reads the query column of a CSV', async () => {
    fs.writeFileSync(path.join(dir, 'q.csv'), 'id,query,note\n1,"ramen, berlin",x\n2,coffee portland,\n3,,empty\n');
    expect(await readQueriesFile('q.csv', dir)).toEqual(['ramen, berlin', 'coffee portland']);
  });

  it('reads one query per line otherwise', async () => {
    fs.writeFileSync(path.join(dir, 'q.txt'), 'ramen berlin\r\n\r\ncoffee, portland\n');
    expect(await readQueriesFile('q.txt', dir)).toEqual(['ramen berlin', 'coffee, portland']);
  });

  it('says what to fix when the file is missing or empty', async () => {
    await expect(readQueriesFile('nope.txt', dir)).rejects.toThrow(/cannot read queries_file/);
    fs.writeFileSync(path.join(dir, 'empty.txt'), '\n\n');
    await expect(readQueriesFile('empty.txt', dir)).rejects.toThrow(/holds no queries/);
  });

  it('drops repeated queries', () => {
    expect(uniqueQueries(['a', ' b ', 'a', 'b'])).toEqual(['a', 'b']);
  });
});
