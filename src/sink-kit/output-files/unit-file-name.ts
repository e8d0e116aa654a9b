/** File names for units: readable, safe on any filesystem, and distinct for distinct unit ids. */
import { createHash } from 'node:crypto';

/**
 * `20250101023000-ab12cd/snapshot:snap_x:part:3` → `20250101023000-ab12cd_snapshot_snap_x_part_3-1f0e9a2c`.
 * The hash suffix keeps ids that sanitise alike (`a:b`, `a/b`) apart; long ids are shortened before it.
 */
export function unitFileStem(unitId: string): string {
  const hash = createHash('sha1').update(unitId).digest('hex').slice(0, 8);
  const safe = unitId
    .replace(/[^A-Za-z0-9._-]+/g, '_')
    .replace(/^[._-]+/, '')
    .slice(0, 120);
  return `${safe || 'unit'}-${hash}`;
}
