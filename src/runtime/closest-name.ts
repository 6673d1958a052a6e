/**
 * The candidate closest to `name`, for a "did you mean …?" hint: compared
 * case-insensitively by Damerau-Levenshtein distance (optimal string
 * alignment: insertions, deletions, substitutions and swaps of two
 * neighbouring characters), and close enough to be a typo: at most a third
 * of the longer name's length (at least one edit), and not every character
 * changed. On a tie the earlier candidate wins. `undefined` when none is
 * that close.
 * @internal
 */
export function closestName(name: string, candidates: Iterable<string>): string | undefined {
  const wanted = name.toLowerCase();
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of candidates) {
    const distance = editDistance(wanted, candidate.toLowerCase());
    const longer = Math.max(wanted.length, candidate.length);
    if (distance <= Math.max(1, Math.floor(longer / 3)) && distance < longer && distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

/** Optimal-string-alignment distance between `a` and `b`, in O(|a|·|b|) time. */
function editDistance(a: string, b: string): number {
  // Rows i-2, i-1 and i of the distance matrix.
  let before = new Array<number>(b.length + 1).fill(0);
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  let row = new Array<number>(b.length + 1).fill(0);
  for (let i = 1; i <= a.length; i++) {
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(previous[j]! + 1, row[j - 1]! + 1, previous[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, before[j - 2]! + 1);
      row[j] = d;
    }
    [before, previous, row] = [previous, row, before];
  }
  return previous[b.length]!;
}
