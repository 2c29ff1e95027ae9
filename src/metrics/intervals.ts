/**
 * Uncertainty for evaluation numbers (docs/deciding.md; the library choice in docs/design.md, "Statistics library"):
 * Student t intervals over per-task means (the task is the cluster: repeats of one task are not independent draws),
 * a seeded cluster bootstrap, the paired difference of two runs and McNemar's exact test. Quantiles and the binomial
 * distribution come from stdlib's reviewed implementations, which agree with scipy to machine precision; only the
 * arithmetic around them is here.
 *
 * Every function answers defined values for degenerate input and never NaN: fewer than two tasks give no interval
 * (`null`), zero variance gives the point interval `[mean, mean]`.
 */
import binomialCdf from '@stdlib/stats-base-dists-binomial-cdf';
import tQuantile from '@stdlib/stats-base-dists-t-quantile';
import { seededRandom } from '../seeded-random.js';
import { mean, sampleStd } from './stats.js';

export type Interval = [low: number, high: number];

export const CONFIDENCE = 0.95;

export interface MeanEstimate {
  /** The mean of the values (of the per-task means, for a clustered estimate). */
  mean: number;
  /** Sample standard deviation ÷ √n; null below two values. */
  stderr: number | null;
  /** mean ± t(0.975, n − 1) · stderr; null below two values. */
  ci95: Interval | null;
  /** How many values (tasks) the estimate rests on. */
  n: number;
}

/** The Student t interval of the mean of `values`; undefined for no values at all. */
export function studentT(values: readonly number[]): MeanEstimate | undefined {
  const n = values.length;
  if (n === 0) return undefined;
  const center = mean(values);
  if (n < 2) return { mean: center, stderr: null, ci95: null, n };
  const stderr = sampleStd(values) / Math.sqrt(n);
  const half = tQuantile(1 - (1 - CONFIDENCE) / 2, n - 1) * stderr;
  return { mean: center, stderr, ci95: [center - half, center + half], n };
}

/**
 * The percentile interval of the mean of `values` over `samples` resamples with replacement, drawn from a generator
 * seeded with `seed`, so the same run files and seed give the same interval on every machine. Null below two values.
 */
export function bootstrapInterval(values: readonly number[], samples: number, seed: number): Interval | null {
  const n = values.length;
  if (n < 2 || samples < 1) return null;
  const random = seededRandom(seed);
  const means = new Float64Array(samples);
  for (let s = 0; s < samples; s++) {
    let sum = 0;
    for (let i = 0; i < n; i++) sum += values[Math.floor(random() * n)]!;
    means[s] = sum / n;
  }
  means.sort();
  const tail = (1 - CONFIDENCE) / 2;
  return [quantileSorted(means, tail), quantileSorted(means, 1 - tail)];
}

/** Linear interpolation between closest ranks (numpy's default `linear` method). */
function quantileSorted(sorted: Float64Array, q: number): number {
  const position = q * (sorted.length - 1);
  const below = Math.floor(position);
  const above = Math.min(below + 1, sorted.length - 1);
  return sorted[below]! + (position - below) * (sorted[above]! - sorted[below]!);
}

/**
 * McNemar's exact test on the discordant pairs: `b` tasks that only the baseline solved, `c` that only the candidate
 * solved. Two-sided: twice the smaller binomial tail at p = ½, capped at 1; 1 when no pair is discordant.
 */
export function mcnemarExact(b: number, c: number): number {
  const discordant = b + c;
  if (discordant === 0) return 1;
  return Math.min(1, 2 * binomialCdf(Math.min(b, c), discordant, 0.5));
}

export type Verdict = 'better' | 'worse' | 'inconclusive';

/**
 * The verdict of a difference interval against a margin: better when the whole interval lies above `margin`, worse
 * when it lies below `-margin`, otherwise (or without an interval) inconclusive.
 */
export function verdictOf(ci95: Interval | null, margin: number): Verdict {
  if (ci95 === null) return 'inconclusive';
  if (ci95[0] > margin) return 'better';
  if (ci95[1] < -margin) return 'worse';
  return 'inconclusive';
}
