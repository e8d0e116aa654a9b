import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SHARED_STATE_NAME, sharedStateAt } from '../../../src/sink-kit/output-files/shared-state.js';

describe('shared state next to an output', () => {
  it('a local output keeps one dotted file, replaced whole, and none before the first write', async () => {
    const base = mkdtempSync(path.join(tmpdir(), 'sluice-shared-'));
    const store = sharedStateAt('out/companies', base)!;
    expect(store.location).toBe(path.join(base, 'out/companies', SHARED_STATE_NAME));
    expect(await store.read()).toBeUndefined();
    await store.write('{"id":"a"}');
    await store.write('{"id":"b"}');
    expect(await store.read()).toBe('{"id":"b"}');
    // No temp file left beside it, and nothing a reader of data files would list.
    expect(readdirSync(path.join(base, 'out/companies'))).toEqual([SHARED_STATE_NAME]);
  });

  it('a sink path that is a file (a database) has no record beside it', async () => {
    const base = mkdtempSync(path.join(tmpdir(), 'sluice-shared-'));
    writeFileSync(path.join(base, 'w.duckdb'), '');
    expect(await sharedStateAt('w.duckdb', base)!.read()).toBeUndefined();
  });

  it('an s3:// output keeps it as an object beside the manifest; other schemes have none', () => {
    expect(sharedStateAt('s3://lake/companies/', '/x')!.location).toBe(`s3://lake/companies/${SHARED_STATE_NAME}`);
    expect(sharedStateAt('gs://lake/companies/', '/x')).toBeUndefined();
  });
});
