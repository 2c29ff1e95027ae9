/**
 * Per-step service latency over a run, for `<stem>_status.json` and the viewer's latency chart. The remote agent
 * measures each loop step's service call (`_ng_step_latency_secs` on its `/run` result); the collector folds the
 * list into a `LatencyByStep` and takes it off success rows before writing them, because a success row is exactly
 * the environment's `/verify` answer plus the collector's stamps (decision C4), as in NeMo Gym. Failure rows (ours,
 * D2) keep it as evidence.
 *
 * The agent adds the list to a success result only when the request carries `STEP_LATENCY_HEADER: 1`, which tsgym's
 * collector sends: a NeMo Gym collector calling the agent's `/run` gets exactly the verify response and so writes a
 * reference-shaped row.
 *
 * Memory is fixed: one log-bucketed histogram (5% wide buckets from 1 ms to ~1 h) per loop step, steps past
 * `MAX_STEPS` folded into the last; recording a rollout is a few array increments. Percentiles are read back with at
 * most 5% relative error, whatever the number of rollouts.
 */

const MIN_SECS = 0.001;
const GROWTH = 1.05;
const BUCKETS = Math.ceil(Math.log(3600 / MIN_SECS) / Math.log(GROWTH)) + 2;
export const MAX_STEPS = 30;
/** Entries of one result's list that are looked at (a result is data from outside). */
const MAX_STEPS_READ = 10_000;

function bucketOf(secs: number): number {
  if (secs <= MIN_SECS) return 0;
  return Math.min(BUCKETS - 1, 1 + Math.floor(Math.log(secs / MIN_SECS) / Math.log(GROWTH)));
}

/** The upper edge of a bucket, in seconds. */
function edgeOf(bucket: number): number {
  return bucket === 0 ? MIN_SECS : MIN_SECS * GROWTH ** bucket;
}

/** Seconds, rounded to 4 significant digits (the buckets are 5% wide: more digits would be noise). */
function rounded(secs: number): number {
  return Number(secs.toPrecision(4));
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

  /** Records one result's `_ng_step_latency_secs` (anything that is not a list of non-negative seconds is skipped). */
  addResult(latencies: unknown): void {
    if (!Array.isArray(latencies)) return;
    for (let step = 0; step < latencies.length && step < MAX_STEPS_READ; step++) {
      const secs: unknown = latencies[step];
      if (typeof secs === 'number' && Number.isFinite(secs) && secs >= 0) this.add(step + 1, secs);
    }
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
          if (seen >= rank) return rounded(edgeOf(bucket));
        }
        return rounded(edgeOf(histogram.length - 1));
      };
      return [{ step: index + 1, count, p50: at(0.5), p90: at(0.9), p99: at(0.99) }];
    });
  }
}
