/**
 * How a source's downloaded or local bytes are decoded, built in one place: `read()` decodes with these options
 * and `rawFile()` hands them over with the file, so the fast path (a sink's native reader, or the engine decoding
 * the file) and the JS path read the same records. Two copies of these options once drifted apart and made the
 * two paths disagree on CSV cells holding JSON.
 */
import type { RawDecodeOptions, RawFormat } from '../core/types.js';

export function rawDecodeOptions(format: RawFormat, itemsPath?: string): RawDecodeOptions {
  return {
    format,
    ...(itemsPath !== undefined && { path: itemsPath }),
    // CSV cannot nest: the service writes nested values as JSON text in the cell (docs/service.md), and users'
    // exports do the same. Cells that parse as an array or object become one again.
    ...(format === 'csv' && { jsonColumns: 'auto' as const }),
  };
}
