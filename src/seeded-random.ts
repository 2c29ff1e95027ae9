/**
 * mulberry32: a tiny seeded generator, identical on every platform — for data generators (the same seed writes the
 * same rows) and for verifiers that sample (the math environment's points), so results are the same on every run and
 * every machine.
 */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
