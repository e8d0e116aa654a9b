/**
 * "Did you mean …?" for a mistyped name (a command, a pipeline key, a filter operator). A leaf module: the CLI,
 * the pipeline checker and the sources all suggest, and none of them may import another for it.
 */

/** The candidate closest to `word`, if it is close enough to be a plausible typo (case is ignored). */
export function didYouMean(word: string, candidates: string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const c of candidates) {
    const d = editDistance(word.toLowerCase(), c.toLowerCase());
    if (d < bestDistance) [best, bestDistance] = [c, d];
  }
  // Short words tolerate one slip; longer ones about one in three letters.
  const tolerance = word.length <= 3 ? 1 : Math.max(2, Math.floor(word.length / 3));
  return best !== undefined && bestDistance <= tolerance ? best : undefined;
}

/** Levenshtein distance, one row at a time. */
function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = tmp;
    }
  }
  return row[b.length]!;
}
