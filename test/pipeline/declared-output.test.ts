import { describe, expect, it } from 'vitest';
import type { Sink, SinkContext } from '../../src/core/types.js';
import { LINEAGE_COLUMNS } from '../../src/schema/lineage.js';
import { withLineage } from '../../src/runtime/lineage.js';
import { declaredOutput } from '../../src/pipeline/declared-output.js';
import { registry } from '../../src/pipeline/registry.js';
import { BIGINT, DOUBLE, VARCHAR } from '../../src/core/logical-type.js';
import { presetDeclared } from '../../src/transforms/normalize.js';

/** Validated as a pipeline file's transforms are (defaults applied). */
function chain(...configs: Record<string, unknown>[]): { type: string }[] {
  return configs.map((c) => registry.transform.find((d) => d.type === c.type)!.schema.parse(c) as { type: string });
}

const names = (d: readonly { name: string }[] | undefined) => d?.map((c) => c.name);

describe('declaredOutput', () => {
  it('a preset declares its columns; filter and dedupe pass them through', () => {
    const d = declaredOutput(
      chain(
        { type: 'normalize', preset: 'reviews' },
        { type: 'filter', field: 'rating', op: '>=', value: 4 },
        { type: 'dedupe', key: ['review_id'] },
      ),
      registry,
    );
    expect(d).toEqual(presetDeclared('reviews'));
  });

  it('keep_image_data adds the image columns', () => {
    const d = declaredOutput(chain({ type: 'normalize', preset: 'serp_organic', keep_image_data: true }), registry);
    expect(names(d)?.slice(-3)).toEqual(['icon', 'image', 'image_base64']);
  });

  it('select, rename and cast adjust the columns', () => {
    const d = declaredOutput(
      chain(
        { type: 'normalize', preset: 'serp_related' },
        { type: 'select', fields: ['text', 'rank', 'depth', 'link'] },
        { type: 'rename', fields: { text: 'search', link: 'text' } },
        { type: 'cast', fields: { rank: 'double', depth: 'text' }, on_error: 'null' },
      ),
      registry,
    );
    expect(d?.map((c) => [c.name, c.type, c.nullable])).toEqual([
      ['search', VARCHAR, true],
      ['rank', DOUBLE, true],
      ['depth', VARCHAR, true],
      ['text', VARCHAR, true],
    ]);
    const strict = declaredOutput(
      chain({ type: 'normalize', preset: 'serp_related' }, { type: 'cast', fields: { depth: 'int' } }),
      registry,
    );
    expect(strict?.find((c) => c.name === 'depth')).toMatchObject({ type: BIGINT, nullable: false });
    const dropped = declaredOutput(
      chain({ type: 'normalize', preset: 'serp_related' }, { type: 'select', fields: ['depth'], exclude: true }),
      registry,
    );
    expect(names(dropped)).not.toContain('depth');
    expect(dropped).toHaveLength(presetDeclared('serp_related').length - 1);
  });

  it('undeclared: no preset, flatten after one, or a select of a column of no known type', () => {
    expect(declaredOutput([], registry)).toBeUndefined();
    expect(declaredOutput(chain({ type: 'select', fields: ['a'] }), registry)).toBeUndefined();
    expect(
      declaredOutput(chain({ type: 'normalize', preset: 'company_profile' }, { type: 'flatten' }), registry),
    ).toBeUndefined();
    expect(
      declaredOutput(
        chain({ type: 'normalize', preset: 'serp_pages' }, { type: 'select', fields: ['query', 'nonexistent'] }),
        registry,
      ),
    ).toBeUndefined();
    // A preset after an undeclaring transform declares again.
    expect(declaredOutput(chain({ type: 'flatten' }, { type: 'normalize', preset: 'serp_pages' }), registry)).toEqual(
      presetDeclared('serp_pages'),
    );
  });

  it('a sink with lineage gets the lineage columns declared after the others; undeclared stays undeclared', async () => {
    const seen: (SinkContext['declared'] | 'none')[] = [];
    const sink = { open: (ctx: SinkContext) => void seen.push(ctx.declared ?? 'none') } as unknown as Sink;
    const ctx = { pipeline: 'p' } as SinkContext;
    const declared = presetDeclared('serp_pages');
    await withLineage(sink, () => 'run-1').open({ ...ctx, declared });
    await withLineage(sink, () => 'run-1').open(ctx);
    expect(seen[0]).toEqual([...declared, ...LINEAGE_COLUMNS]);
    expect(names(LINEAGE_COLUMNS)).toEqual(['_sluice_run_id', '_sluice_loaded_at']);
    expect(LINEAGE_COLUMNS.map((c) => c.type.kind)).toEqual(['varchar', 'timestamp']);
    expect(seen[1]).toBe('none');
  });
});
