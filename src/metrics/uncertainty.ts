/**
 * The uncertainty `gym eval profile` puts next to every mean (docs/deciding.md): per numeric column, a 95% Student t
 * interval clustered by task — over the per-task means of the column — with its standard error, and on request a
 * seeded cluster bootstrap interval; plus the task and rollout counts the interval rests on.
 */
import { bootstrapInterval, studentT } from './intervals.js';
import { INDEX_COLUMNS, type KeyedResult } from './metrics.js';
import { columnsOf } from './stats.js';

export interface BootstrapOptions {
  samples: number;
  seed: number;
}

/** Per task (in first-seen order), the mean of `column` over the task's rollouts that have it. */
export function taskMeans(entries: readonly KeyedResult[], column: string): number[] {
  const sums = new Map<number, { sum: number; count: number }>();
  for (const entry of entries) {
    const value = entry.values[column];
    if (value === undefined) continue;
    const slot = sums.get(entry.task);
    if (slot) {
      slot.sum += value;
      slot.count++;
    } else sums.set(entry.task, { sum: value, count: 1 });
  }
  return [...sums.values()].map((slot) => slot.sum / slot.count);
}

/**
 * `ci95/<col>` and `stderr/<col>` for every column (null where fewer than two tasks have the column),
 * `ci95_bootstrap/<col>` with `bootstrap`, then `num_tasks` and `num_rollouts`.
 */
export function describeUncertainty(
  entries: readonly KeyedResult[],
  bootstrap?: BootstrapOptions,
): Record<string, unknown> {
  const columns = columnsOf(
    entries.map((entry) => entry.values),
    INDEX_COLUMNS,
  );
  const intervals: Record<string, unknown> = {};
  const errors: Record<string, unknown> = {};
  const resampled: Record<string, unknown> = {};
  for (const column of columns) {
    const means = taskMeans(entries, column);
    const estimate = studentT(means);
    if (!estimate) continue;
    intervals[`ci95/${column}`] = estimate.ci95;
    errors[`stderr/${column}`] = estimate.stderr;
    if (bootstrap) resampled[`ci95_bootstrap/${column}`] = bootstrapInterval(means, bootstrap.samples, bootstrap.seed);
  }
  return {
    ...intervals,
    ...errors,
    ...resampled,
    num_tasks: new Set(entries.map((entry) => entry.task)).size,
    num_rollouts: entries.length,
  };
}
