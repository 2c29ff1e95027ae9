/**
 * Per-step service latency percentiles in fixed memory: one log-bucketed histogram (5% wide buckets from 1 ms to
 * ~1 h) per loop step, steps past `MAX_STEPS` folded into the last. Percentiles are read back with at most 5%
 * relative error, whatever the number of rows.
 */

const MIN_SECS = 0.001;
const GROWTH = 1.05;
const BUCKETS = Math.ceil(Math.log(3600 / MIN_SECS) / Math.log(GROWTH)) + 2;
export const MAX_STEPS = 30;

function bucketOf(secs: number): number {
  if (secs <= MIN_SECS) return 0;
  return Math.min(BUCKETS - 1, 1 + Math.floor(Math.log(secs / MIN_SECS) / Math.log(GROWTH)));
}

/** The upper edge of a bucket, in seconds. */
function edgeOf(bucket: number): number {
  return bucket === 0 ? MIN_SECS : MIN_SECS * GROWTH ** bucket;
}

export interface StepPercentiles {
  step: number;
  count: number;
  p50: number;
  p90: number;
  p99: number;
}

export class LatencyByStep {
  private readonly histograms: Uint32Array[] = [];
  private readonly counts: number[] = [];

  add(step: number, secs: number): void {
    const index = Math.min(step, MAX_STEPS) - 1;
    while (this.histograms.length <= index) {
      this.histograms.push(new Uint32Array(BUCKETS));
      this.counts.push(0);
    }
    this.histograms[index]![bucketOf(secs)]!++;
    this.counts[index]!++;
  }

  /** One entry per step that has samples (the last one stands for step MAX_STEPS and beyond). */
  percentiles(): StepPercentiles[] {
    return this.histograms.flatMap((histogram, index) => {
      const count = this.counts[index]!;
      if (count === 0) return [];
      const at = (q: number): number => {
        const rank = Math.max(1, Math.ceil(q * count));
        let seen = 0;
        for (let bucket = 0; bucket < histogram.length; bucket++) {
          seen += histogram[bucket]!;
          if (seen >= rank) return edgeOf(bucket);
        }
        return edgeOf(histogram.length - 1);
      };
      return [{ step: index + 1, count, p50: at(0.5), p90: at(0.9), p99: at(0.99) }];
    });
  }
}
