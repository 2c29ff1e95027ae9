/**
 * Compact lookup tables for per-row bookkeeping that must not grow like a `Set<string>` with the input: an
 * open-addressing hash table over fixed-width uint32 keys in typed arrays (12–16 bytes per slot), and a
 * dense counter array for task indices.
 */
const TWO_POW_32 = 4294967296;

/** Most slots filled before the table grows: linear probing stays short below this. */
const MAX_LOAD = 0.75;
/** Marks a free slot, so no separate occupancy array is needed; never a stored value. */
const EMPTY = 0xffffffff;

/**
 * Open addressing with linear probing; keys are `width` uint32 words, values one uint32. The capacity need not be a
 * power of two, so a table sized up front for a known number of keys wastes little.
 */
class U32KeyTable {
  private keys: Uint32Array;
  private values: Uint32Array;
  private capacity: number;
  size = 0;

  constructor(
    private readonly width: 2 | 3,
    expectedKeys = 1024,
  ) {
    this.capacity = Math.max(16, Math.ceil(expectedKeys / MAX_LOAD) + 1);
    this.keys = new Uint32Array(this.capacity * width);
    this.values = new Uint32Array(this.capacity).fill(EMPTY);
  }

  private home(k0: number, k1: number, k2: number): number {
    let h = Math.imul(k0 ^ 0x9e3779b9, 0x85ebca6b);
    h = Math.imul(h ^ (h >>> 13) ^ k1, 0xc2b2ae35);
    h = Math.imul(h ^ (h >>> 16) ^ k2, 0x27d4eb2f);
    // Map the 32-bit hash onto [0, capacity) by multiplication rather than modulo.
    return Math.floor(((h ^ (h >>> 15)) >>> 0) * (this.capacity / 4294967296));
  }

  /** The slot holding the key, or the empty slot where it would go. */
  private slot(k0: number, k1: number, k2: number): number {
    const { keys, values, width, capacity } = this;
    for (let i = this.home(k0, k1, k2); ; i = i + 1 === capacity ? 0 : i + 1) {
      if (values[i] === EMPTY) return i;
      const base = i * width;
      if (keys[base] === k0 && keys[base + 1] === k1 && (width === 2 || keys[base + 2] === k2)) return i;
    }
  }

  get(k0: number, k1: number, k2 = 0): number | undefined {
    const value = this.values[this.slot(k0, k1, k2)]!;
    return value === EMPTY ? undefined : value;
  }

  set(k0: number, k1: number, k2: number, value: number): void {
    if (value === EMPTY) throw new RangeError('0xffffffff cannot be stored: it marks free slots');
    let i = this.slot(k0, k1, k2);
    if (this.values[i] === EMPTY) {
      if (this.size + 1 > this.capacity * MAX_LOAD) {
        this.grow();
        i = this.slot(k0, k1, k2);
      }
      const base = i * this.width;
      this.keys[base] = k0;
      this.keys[base + 1] = k1;
      if (this.width === 3) this.keys[base + 2] = k2;
      this.size++;
    }
    this.values[i] = value;
  }

  forEach(visit: (k0: number, k1: number, k2: number, value: number) => void): void {
    const { keys, width } = this;
    for (let i = 0; i < this.capacity; i++) {
      if (this.values[i] === EMPTY) continue;
      const base = i * width;
      visit(keys[base]!, keys[base + 1]!, width === 3 ? keys[base + 2]! : 0, this.values[i]!);
    }
  }

  private grow(): void {
    const { keys, values, width } = this;
    this.capacity *= 2;
    this.keys = new Uint32Array(this.capacity * width);
    this.values = new Uint32Array(this.capacity).fill(EMPTY);
    this.size = 0;
    for (let i = 0; i < values.length; i++) {
      if (values[i] === EMPTY) continue;
      const base = i * width;
      this.set(keys[base]!, keys[base + 1]!, width === 3 ? keys[base + 2]! : 0, values[i]!);
    }
  }
}

/** A rollout key can be tabled when the task is a safe integer and the rollout a non-negative uint32. */
export function isRolloutKey(task: unknown, rollout: unknown): task is number {
  return (
    Number.isSafeInteger(task) &&
    Number.isSafeInteger(rollout) &&
    (rollout as number) >= 0 &&
    (rollout as number) < TWO_POW_32
  );
}

/** (task, rollout) → uint32 state, for millions of keys without a string per key. */
export class RolloutKeyTable {
  private readonly table = new U32KeyTable(3);

  get size(): number {
    return this.table.size;
  }

  get(task: number, rollout: number): number | undefined {
    return this.table.get(task >>> 0, Math.floor(task / TWO_POW_32) >>> 0, rollout);
  }

  set(task: number, rollout: number, value: number): void {
    this.table.set(task >>> 0, Math.floor(task / TWO_POW_32) >>> 0, rollout, value);
  }

  forEach(visit: (task: number, rollout: number, value: number) => void): void {
    this.table.forEach((lo, hi, rollout, value) => visit((hi | 0) * TWO_POW_32 + lo, rollout, value));
  }
}

/**
 * Two 32-bit lanes of a multiplicative hash over the bytes, cross-mixed at the end (the cyrb53 construction, kept
 * to 64 bits). Pure arithmetic: no allocation per line, unlike a crypto digest object.
 */
function digestLine(bytes: Uint8Array, out: Uint32Array): void {
  let h1 = 0xdeadbeef ^ bytes.length;
  let h2 = 0x41c6ce57 ^ bytes.length;
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i]!;
    h1 = Math.imul(h1 ^ byte, 2654435761);
    h2 = Math.imul(h2 ^ byte, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507);
  h1 ^= Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507);
  h2 ^= Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  out[0] = h1;
  out[1] = h2;
}

/**
 * Raw input line → task index, keyed by a 64-bit digest of the line's bytes: byte-identical lines share a task.
 * (A digest collision between two of a million distinct lines has odds of about 3·10⁻⁸.)
 */
export class LineIndexTable {
  private readonly table: U32KeyTable;

  /** `expectedLines`: an upper bound on distinct lines, when known, so the table never has to grow. */
  constructor(expectedLines?: number) {
    this.table = new U32KeyTable(2, expectedLines);
  }

  get size(): number {
    return this.table.size;
  }

  /** The line's task index, assigning the next one (the count of distinct lines so far) to a new line. */
  private readonly digest = new Uint32Array(2);

  indexOf(line: Uint8Array): number {
    digestLine(line, this.digest);
    const [lo, hi] = this.digest as unknown as [number, number];
    const known = this.table.get(lo, hi);
    if (known !== undefined) return known;
    const index = this.table.size;
    this.table.set(lo, hi, 0, index);
    return index;
  }
}

const DENSE_LIMIT = 1 << 22;

/**
 * A counter per task index: dense for the usual 0..N indices, a map for the rare huge or negative ones.
 * `next(task)` returns the current count and increments it (the running `_ng_rollout_index` of a task).
 */
export class TaskCounters {
  private dense = new Uint32Array(1024);
  private readonly sparse = new Map<number, number>();
  /** Number of distinct tasks seen. */
  distinct = 0;

  get(task: number): number {
    if (task >= 0 && task < DENSE_LIMIT && Number.isInteger(task))
      return task < this.dense.length ? this.dense[task]! : 0;
    return this.sparse.get(task) ?? 0;
  }

  next(task: number): number {
    const current = this.get(task);
    if (current === 0) this.distinct++;
    if (task >= 0 && task < DENSE_LIMIT && Number.isInteger(task)) {
      if (task >= this.dense.length) {
        let length = this.dense.length;
        while (length <= task) length *= 2;
        const grown = new Uint32Array(length);
        grown.set(this.dense);
        this.dense = grown;
      }
      this.dense[task] = current + 1;
    } else {
      this.sparse.set(task, current + 1);
    }
    return current;
  }
}
