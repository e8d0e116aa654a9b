import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { configuredQueries, readQueriesFile, uniqueQueries } from '../../../src/sources/crawl/queries.js';

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

  it('takes the configured list, else the file, without repeats', async () => {
    fs.writeFileSync(path.join(dir, 'dup.txt'), 'ramen\nramen\ncoffee\n');
    expect(await configuredQueries({ queries: ['b', 'a', 'b'] }, dir)).toEqual(['b', 'a']);
    expect(await configuredQueries({ queries_file: 'dup.txt' }, dir)).toEqual(['ramen', 'coffee']);
  });
});
