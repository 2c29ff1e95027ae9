/**
 * Python difflib's `SequenceMatcher.ratio` and `get_close_matches`, so "Did you mean" hints pick the same
 * candidates the reference does (no junk heuristic: it only applies to sequences of 200+ items).
 */

interface Match {
  a: number;
  b: number;
  size: number;
}

function longestMatch(a: string, b: string, aLo: number, aHi: number, bLo: number, bHi: number): Match {
  let best: Match = { a: aLo, b: bLo, size: 0 };
  // lengths[j] = length of the match ending at a[i-1], b[j-1] (classic difflib j2len sweep)
  let previous = new Map<number, number>();
  for (let i = aLo; i < aHi; i++) {
    const current = new Map<number, number>();
    for (let j = bLo; j < bHi; j++) {
      if (a[i] !== b[j]) continue;
      const size = (previous.get(j - 1) ?? 0) + 1;
      current.set(j, size);
      if (size > best.size) best = { a: i - size + 1, b: j - size + 1, size };
    }
    previous = current;
  }
  return best;
}

function matchingCharacters(a: string, b: string): number {
  let total = 0;
  const queue: Array<[number, number, number, number]> = [[0, a.length, 0, b.length]];
  while (queue.length > 0) {
    const [aLo, aHi, bLo, bHi] = queue.pop()!;
    const match = longestMatch(a, b, aLo, aHi, bLo, bHi);
    if (match.size === 0) continue;
    total += match.size;
    if (aLo < match.a && bLo < match.b) queue.push([aLo, match.a, bLo, match.b]);
    if (match.a + match.size < aHi && match.b + match.size < bHi) {
      queue.push([match.a + match.size, aHi, match.b + match.size, bHi]);
    }
  }
  return total;
}

/** difflib `SequenceMatcher(None, a, b).ratio()`. */
export function similarityRatio(a: string, b: string): number {
  const length = a.length + b.length;
  return length === 0 ? 1 : (2 * matchingCharacters(a, b)) / length;
}

/** difflib `get_close_matches(word, candidates, n, cutoff)`: best first, ties broken like `heapq.nlargest`. */
export function closeMatches(word: string, candidates: Iterable<string>, n = 3, cutoff = 0.6): string[] {
  const scored: Array<{ score: number; candidate: string }> = [];
  for (const candidate of candidates) {
    const score = similarityRatio(candidate, word);
    if (score >= cutoff) scored.push({ score, candidate });
  }
  scored.sort((x, y) => y.score - x.score || (x.candidate < y.candidate ? 1 : x.candidate > y.candidate ? -1 : 0));
  return scored.slice(0, n).map((entry) => entry.candidate);
}

/** `'a', 'b'` as the reference quotes lists of names. */
export function quoteList(names: readonly string[]): string {
  return names.map((name) => `'${name}'`).join(', ');
}
