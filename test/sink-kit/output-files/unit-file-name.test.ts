import { describe, expect, it } from 'vitest';
import { unitFileStem } from '../../../src/sink-kit/output-files/unit-file-name.js';

describe('unitFileStem', () => {
  it('is readable, filesystem-safe, and distinct for ids that sanitise alike', () => {
    const a = unitFileStem('20250101023000-ab12cd/snapshot:snap_x:part:3');
    expect(a).toMatch(/^20250101023000-ab12cd_snapshot_snap_x_part_3-[0-9a-f]{8}$/);
    expect(unitFileStem('r/a:b')).not.toBe(unitFileStem('r/a/b'));
    expect(unitFileStem('r/a:b')).toBe(unitFileStem('r/a:b'));
    expect(unitFileStem('../../etc/passwd')).not.toMatch(/^[./]/);
    expect(unitFileStem('x'.repeat(500)).length).toBeLessThan(140);
  });
});
