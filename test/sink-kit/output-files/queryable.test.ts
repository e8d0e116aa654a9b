/**
 * A file output's checks read its published files and nothing else (src/sink-kit/output-files/queryable.ts): a file
 * outside the output is refused by DuckDB, a link inside the output that leads out of it is never read, and nothing
 * can be written beside the files.
 */
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { QueryRefused } from '../../../src/core/errors.js';
import { publishedFilesQueryable } from '../../../src/sink-kit/output-files/queryable.js';
import { removeTempDirs, tempDir } from '../../sinks/helpers.js';

afterAll(removeTempDirs);

const reader = (files: string) => `read_json_auto(${files}, format = 'newline_delimited', union_by_name = true)`;

describe('publishedFilesQueryable', () => {
  it('reads the output’s files; a file outside it, a link out of it and a COPY TO are refused or skipped', async () => {
    const root = path.join(await tempDir(), 'out');
    mkdirSync(path.join(root, 'day=1'), { recursive: true });
    writeFileSync(path.join(root, 'a.jsonl'), '{"id":1}\n');
    writeFileSync(path.join(root, 'day=1', 'b.jsonl'), '{"id":2}\n');
    // Planted by whoever can write into the output: a link to a file the check must never read.
    symlinkSync('/etc/passwd', path.join(root, 'planted.jsonl'));
    const out = await publishedFilesQueryable(path.join(root, '**', '*.jsonl'), root, reader, 'jsonl out');
    try {
      expect(await out.query(`SELECT id FROM ${out.relation} ORDER BY id`)).toEqual([{ id: '1' }, { id: '2' }]);
      const refused = (sql: string) =>
        out.query(sql).then(
          () => undefined,
          (e: unknown) => e,
        );
      const passwd = await refused(`SELECT * FROM read_text('/etc/passwd')`);
      expect(passwd).toBeInstanceOf(QueryRefused);
      expect((passwd as Error).message).toMatch(/outside the checked output/);
      const link = await refused(`SELECT * FROM read_text('${path.join(root, 'planted.jsonl')}')`);
      expect(link).toBeInstanceOf(QueryRefused);
      const copy = await refused(`COPY (SELECT 1) TO '${path.join(root, 'c.csv')}'`);
      expect(copy).toBeInstanceOf(QueryRefused);
      expect(existsSync(path.join(root, 'c.csv'))).toBe(false);
      expect(JSON.stringify(await out.query(`SELECT * FROM ${out.relation}`))).not.toContain(
        readFileSync('/etc/passwd', 'utf8').split(':')[0]! + ':',
      );
    } finally {
      await out.close();
    }
  });
});
