/**
 * The generator's seeded choices (pick, shuffle, take) over one stream, so a seed fixes every row's bytes; one
 * instance is threaded through a whole run, in the order the rows are built.
 */

export class Random {
  constructor(readonly next: () => number) {}
  int(low: number, high: number): number {
    return low + Math.floor(this.next() * (high - low + 1));
  }
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)]!;
  }
  shuffle<T>(items: readonly T[]): T[] {
    const copy = [...items];
    for (let i = copy.length - 1; i > 0; i--) {
      const j = Math.floor(this.next() * (i + 1));
      [copy[i], copy[j]] = [copy[j]!, copy[i]!];
    }
    return copy;
  }
  /** Take one item out of `pool` (so no other sub-task of the row gets it). */
  take<T>(pool: T[]): T {
    const index = Math.floor(this.next() * pool.length);
    return pool.splice(index, 1)[0]!;
  }
}
