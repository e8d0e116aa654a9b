/** Where a sink writes, for `describe()`: as the user would type it from the current directory. */
import path from 'node:path';

/**
 * `configured` is the config's `path`, relative to `baseDir` (the pipeline file's directory). Without `baseDir`
 * it is shown as written; a place outside the current directory is shown absolute, as `../..` chains read badly.
 */
export function displayPath(configured: string, baseDir: string | undefined): string {
  // An object store URL is shown as written.
  if (baseDir === undefined || /^s3:\/\//i.test(configured)) return configured;
  const abs = path.resolve(baseDir, configured);
  const rel = path.relative(process.cwd(), abs);
  return rel === '' ? '.' : rel.startsWith('..') || path.isAbsolute(rel) ? abs : rel;
}
