/**
 * pass@k / majority@k helpers for environments' `computeMetrics` hooks and for `gym eval profile`
 * (docs/design.md, "pass@k and majority@k"). All accuracy values are percentages (0–100). `tasks[i]` is the list of
 * rollouts of task i, in rollout order.
 */
import type { Row } from '../runfiles/row.js';
import { mean, sampleStd } from './stats.js';

export type Scores = Record<string, number>;
/** Named scores of one rollout; booleans count as 0/1. */
export type ScoreFn = (rollout: Row) => Record<string, number | boolean | null | undefined>;

export const defaultScoreFn: ScoreFn = (rollout) => ({ accuracy: rollout.reward as number });

export interface PassMajorityResult {
  /** `pass@{k}/{name}`, `pass@1[avg-of-{k}]/{name}`, `majority@{k}/{name}`, `per_sample_aggregate`, variance keys. */
  metrics: Record<string, unknown>;
  /** Per task, per rollout, the numeric scores. */
  scores: Scores[][];
  scoreNames: string[];
  maxK: number;
}

export interface PassMajorityOptions {
  scoreFn?: ScoreFn;
  /** Field holding the extracted answer: enables `majority@k` and the `no_answer` score. */
  answerKey?: string;
  /**
   * Also `pass^{k}/{name}` (tau-bench's pass^k: all k succeed). Off for environments' hooks, whose metrics keep the
   * reference's keys; `gym eval profile` turns it on.
   */
  passHatK?: boolean;
}

function toScores(raw: ReturnType<ScoreFn>): Scores {
  const out: Scores = {};
  for (const [name, value] of Object.entries(raw)) {
    if (typeof value === 'boolean') out[name] = value ? 1 : 0;
    else if (typeof value === 'number' && Number.isFinite(value)) out[name] = value;
  }
  return out;
}

/** 1 − C(c, k) / C(n, k) as a running product, which never overflows. */
function passAtKUnbiased(n: number, incorrect: number, k: number): number {
  if (incorrect < k) return 1;
  let ratio = 1;
  for (let i = 0; i < k; i++) ratio *= (incorrect - i) / (n - i);
  return 1 - ratio;
}

/** C(correct, k) / C(n, k): the chance that k rollouts drawn without replacement all succeed (tau-bench's pass^k). */
function passHatKUnbiased(n: number, correct: number, k: number): number {
  if (correct < k) return 0;
  let ratio = 1;
  for (let i = 0; i < k; i++) ratio *= (correct - i) / (n - i);
  return ratio;
}

const percentMean = (values: readonly number[]): number => 100 * mean(values);

export function computePassMajorityMetrics(
  tasks: readonly (readonly Row[])[],
  options: PassMajorityOptions = {},
): PassMajorityResult {
  if (tasks.length === 0) return { metrics: {}, scores: [], scoreNames: [], maxK: 0 };
  const scoreFn = options.scoreFn ?? defaultScoreFn;
  const { answerKey } = options;
  const maxK = Math.max(...tasks.map((rollouts) => rollouts.length));

  const scores: Scores[][] = [];
  const answers: unknown[][] = [];
  for (const rollouts of tasks) {
    const taskScores: Scores[] = [];
    const taskAnswers: unknown[] = [];
    for (const rollout of rollouts) {
      const s = toScores(scoreFn(rollout));
      if (answerKey !== undefined) {
        const answer = rollout[answerKey] ?? null;
        taskAnswers.push(answer);
        s.no_answer = answer === null ? 1 : 0;
      }
      taskScores.push(s);
    }
    scores.push(taskScores);
    answers.push(taskAnswers);
  }
  const scoreNames = [...new Set(scores.flatMap((task) => task.flatMap((s) => Object.keys(s))))].sort();

  const metrics: Record<string, unknown> = {};
  for (let k = 1; k <= maxK; k++) {
    for (const name of scoreNames) {
      const passValues: number[] = [];
      const allPassValues: number[] = [];
      const avgValues: number[] = [];
      for (const taskScores of scores) {
        const vals = taskScores.filter((s) => name in s).map((s) => s[name]!);
        if (vals.length >= k && vals.length > 0) {
          const binary = vals.every((v) => v === 0 || v === 1);
          const failures = vals.filter((v) => v === 0).length;
          passValues.push(binary ? passAtKUnbiased(vals.length, failures, k) : Math.max(...vals.slice(0, k)));
          allPassValues.push(
            binary ? passHatKUnbiased(vals.length, vals.length - failures, k) : Math.min(...vals.slice(0, k)),
          );
        }
        const firstK = taskScores
          .slice(0, k)
          .filter((s) => name in s)
          .map((s) => s[name]!);
        if (firstK.length > 0) avgValues.push(mean(firstK));
      }
      if (passValues.length > 0) metrics[`pass@${k}/${name}`] = percentMean(passValues);
      if (options.passHatK && allPassValues.length > 0) metrics[`pass^${k}/${name}`] = percentMean(allPassValues);
      if (avgValues.length > 0) metrics[`pass@1[avg-of-${k}]/${name}`] = percentMean(avgValues);

      if (answerKey !== undefined) {
        const majorityValues = scores.map((taskScores, t) => majorityValue(taskScores, answers[t]!, name, k));
        metrics[`majority@${k}/${name}`] = percentMean(majorityValues);
      }
    }
  }

  // per_sample_aggregate[name][i]: the pass@1 of rollout i alone, across the tasks that have one.
  const perSample: Record<string, number[]> = {};
  for (let run = 0; run < maxK; run++) {
    for (const name of scoreNames) {
      const runScores = scores
        .filter((task) => run < task.length && name in task[run]!)
        .map((task) => task[run]![name]!);
      if (runScores.length > 0) (perSample[name] ??= []).push(percentMean(runScores));
    }
  }
  metrics.per_sample_aggregate = perSample;

  for (let k = 2; k <= maxK; k++) {
    for (const name of scoreNames) {
      const runAverages = (perSample[name] ?? []).slice(0, k);
      if (runAverages.length < 2) continue;
      const std = sampleStd(runAverages);
      metrics[`pass@1[avg-of-${k}]/${name}/std_dev_across_runs`] = std;
      metrics[`pass@1[avg-of-${k}]/${name}/std_err_across_runs`] = std / Math.sqrt(runAverages.length);
    }
  }
  return { metrics, scores, scoreNames, maxK };
}

/** Majority vote over the first k (answer, score) pairs with an answer: the mean score of the pairs tied first. */
function majorityValue(
  taskScores: readonly Scores[],
  taskAnswers: readonly unknown[],
  name: string,
  k: number,
): number {
  const counts = new Map<string, { count: number; score: number }>();
  for (let i = 0; i < Math.min(k, taskScores.length); i++) {
    const answer = taskAnswers[i];
    const s = taskScores[i]!;
    if (answer === null || answer === undefined || !(name in s)) continue;
    const key = JSON.stringify([answer, s[name]]);
    const entry = counts.get(key);
    if (entry) entry.count++;
    else counts.set(key, { count: 1, score: s[name]! });
  }
  if (counts.size === 0) return 0;
  const best = Math.max(...[...counts.values()].map((entry) => entry.count));
  const tied = [...counts.values()].filter((entry) => entry.count === best);
  return mean(tied.map((entry) => entry.score));
}

/** Adds `pass@1[avg-of-{k}]/{name}/avg_sample_std_dev`: the mean over tasks of each task's sample std of its first k scores. */
export function addAvgSampleStdDev(result: PassMajorityResult): void {
  for (let k = 2; k <= result.maxK; k++) {
    for (const name of result.scoreNames) {
      const stds: number[] = [];
      for (const taskScores of result.scores) {
        const vals = taskScores
          .slice(0, k)
          .filter((s) => name in s)
          .map((s) => s[name]!);
        if (vals.length >= 2) stds.push(sampleStd(vals));
      }
      if (stds.length > 0) result.metrics[`pass@1[avg-of-${k}]/${name}/avg_sample_std_dev`] = mean(stds);
    }
  }
}

/** pass@k metrics per value of `subsetKey` (read from each task's first rollout), prefixed `<value>/`. */
export function computeSubsetMetrics(
  tasks: readonly (readonly Row[])[],
  subsetKey: string,
  options: PassMajorityOptions = {},
): Record<string, unknown> {
  const subsets = new Map<string, Row[][]>();
  for (const rollouts of tasks) {
    const value = rollouts[0]?.[subsetKey];
    if (value === undefined || value === null || value === '' || value === false || value === 0) continue;
    const key = typeof value === 'string' ? value : JSON.stringify(value);
    if (!subsets.has(key)) subsets.set(key, []);
    subsets.get(key)!.push([...rollouts]);
  }
  const out: Record<string, unknown> = {};
  for (const [subset, subsetTasks] of subsets) {
    for (const [key, value] of Object.entries(computePassMajorityMetrics(subsetTasks, options).metrics)) {
      if (key !== 'per_sample_aggregate') out[`${subset}/${key}`] = value;
    }
  }
  return out;
}

const STAT_SUFFIXES = ['std_dev_across_runs', 'std_err_across_runs', 'avg_sample_std_dev'];

/**
 * The entries matching `pattern` (with `{k}` standing for k, e.g. `pass@{k}` or `pass@1[avg-of-{k}]`) at the
 * highest k present, without the variance suffixes.
 */
export function highestKMetrics(
  metrics: Record<string, unknown>,
  pattern: string,
  options: { scoreNames?: readonly string[]; excludeNames?: readonly string[] } = {},
): Record<string, unknown> {
  const escaped = pattern.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace('\\{k\\}', '(\\d+)');
  const regex = new RegExp(`^${escaped}/(.+)$`);
  const matches: Array<{ k: number; key: string }> = [];
  for (const key of Object.keys(metrics)) {
    const m = regex.exec(key);
    if (!m) continue;
    const scoreName = m[2]!;
    if (STAT_SUFFIXES.some((suffix) => scoreName.endsWith(suffix))) continue;
    if (options.scoreNames && !options.scoreNames.includes(scoreName)) continue;
    if (options.excludeNames?.includes(scoreName)) continue;
    matches.push({ k: Number(m[1]), key });
  }
  if (matches.length === 0) return {};
  const top = Math.max(...matches.map((m) => m.k));
  return Object.fromEntries(matches.filter((m) => m.k === top).map((m) => [m.key, metrics[m.key]]));
}
