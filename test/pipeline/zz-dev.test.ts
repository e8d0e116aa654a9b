import { it } from 'vitest';
import { readdirSync } from 'node:fs';
import { validatePipeline } from '../../src/pipeline/load.js';
it('dev', async () => {
  for (const f of readdirSync('test/fixtures/broken').sort()) {
    const v = await validatePipeline(`test/fixtures/broken/${f}`, {});
    for (const p of v.problems) console.log(p.message, '||', p.hint);
  }
});
