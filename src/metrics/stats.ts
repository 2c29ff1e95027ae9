/**
 * Descriptive statistics over rollout results, with the pandas semantics the reference profiler has
 * (docs/design.md, "Profile statistics"): per column `mean`, `max`, `min`, `median`, sample `std` (n − 1) over the
 * values present; a statistic that is undefined is left out; and when *every* std of a group is undefined (a single
 * rollout), the columns that have no missing value in that group get std 0.
 */
import type { Row } from '../runfiles/row.js';

/** The numeric view of one rollout: column name → value, in column order. */
export type NumericRecord = Record<string, number>;

export const STATS = ['mean', 'max', 'min', 'median', 'std'] as const;

export function isPlainRecord(value: unknown): value is Row {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Every top-level number or boolean of a result (booleans as 0/1), with the numeric fields of
 * `response.usage` merged in (usage wins a name clash but keeps the result's column position).
 * Strings, objects, arrays and null are ignored, and so are usage's nested detail objects.
 */
export function numericFields(result: Row): NumericRecord {
  const out: NumericRecord = {};
  const add = (key: string, value: unknown): void => {
    if (typeof value === 'boolean') out[key] = value ? 1 : 0;
    else if (typeof value === 'number' && Number.isFinite(value)) out[key] = value;
    else if (Object.hasOwn(out, key)) delete out[key];
  };
  for (const [key, value] of Object.entries(result)) add(key, value);
  const usage = isPlainRecord(result.response) ? result.response.usage : undefined;
  if (isPlainRecord(usage)) for (const [key, value] of Object.entries(usage)) add(key, value);
  return out;
}

/** The numeric usage fields of a result, in usage order. */
export function usageFields(result: Row): NumericRecord {
  const usage = isPlainRecord(result.response) ? result.response.usage : undefined;
  const out: NumericRecord = {};
  if (!isPlainRecord(usage)) return out;
  for (const [key, value] of Object.entries(usage)) {
    if (typeof value === 'number' && Number.isFinite(value)) out[key] = value;
    else if (typeof value === 'boolean') out[key] = value ? 1 : 0;
  }
  return out;
}

/** The union of the records' columns in order of first appearance (how pandas builds a frame's columns). */
export function columnsOf(records: Iterable<NumericRecord>, exclude: ReadonlySet<string> = new Set()): string[] {
  const seen = new Set<string>();
  const columns: string[] = [];
  for (const record of records) {
    for (const key of Object.keys(record)) {
      if (seen.has(key) || exclude.has(key)) continue;
      seen.add(key);
      columns.push(key);
    }
  }
  return columns;
}

export function mean(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  let sum = 0;
  for (const v of values) sum += v;
  return sum / values.length;
}

export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** Sample standard deviation (n − 1 denominator); NaN for fewer than two values. */
export function sampleStd(values: readonly number[]): number {
  if (values.length < 2) return Number.NaN;
  const m = mean(values);
  let squares = 0;
  for (const v of values) squares += (v - m) * (v - m);
  return Math.sqrt(squares / (values.length - 1));
}

function extreme(values: readonly number[], pick: (a: number, b: number) => number): number {
  if (values.length === 0) return Number.NaN;
  let out = values[0]!;
  for (const v of values) out = pick(out, v);
  return out;
}

/**
 * `mean/<col>`, `max/<col>`, `min/<col>`, `median/<col>`, `std/<col>` (stat-major order) over one group's
 * records, for the given columns. Undefined statistics are omitted.
 */
export function describe(records: readonly NumericRecord[], columns: readonly string[]): Record<string, number> {
  const valuesByColumn = columns.map((column) => {
    const values: number[] = [];
    for (const record of records) {
      const value = record[column];
      if (value !== undefined) values.push(value);
    }
    return values;
  });
  const stds = valuesByColumn.map(sampleStd);
  // A single rollout has no spread: report 0 rather than nothing, for the columns every rollout has.
  if (stds.every(Number.isNaN)) {
    valuesByColumn.forEach((values, i) => {
      if (values.length === records.length && records.length > 0) stds[i] = 0;
    });
  }
  const compute: Record<(typeof STATS)[number], (values: number[], i: number) => number> = {
    mean: (values) => mean(values),
    max: (values) => extreme(values, Math.max),
    min: (values) => extreme(values, Math.min),
    median: (values) => median(values),
    std: (_values, i) => stds[i]!,
  };
  const out: Record<string, number> = {};
  for (const stat of STATS) {
    columns.forEach((column, i) => {
      const value = compute[stat](valuesByColumn[i]!, i);
      if (!Number.isNaN(value)) out[`${stat}/${column}`] = value;
    });
  }
  return out;
}
