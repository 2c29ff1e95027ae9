/**
 * `gym eval compare BASELINE CANDIDATE` (docs/deciding.md): pair two runs task by task and say whether the candidate
 * is better, worse, or whether the runs cannot tell. The unit is the task: each task's mean reward in each run, the
 * per-task differences, and a paired Student t interval on their mean. Repeats sharpen each task's mean; they are not
 * independent evidence, so they never count as extra samples.
 */
import { mcnemarExact, studentT, verdictOf, type Interval, type Verdict } from '../metrics/intervals.js';
import { mean } from '../metrics/stats.js';
import type { RunRewards } from './runs.js';

/** Differences smaller than this are float noise, not a change. */
const EPSILON = 1e-9;

export interface RunSummary {
  path: string;
  tasks: number;
  rollouts: number;
  failed_rollouts: number;
  /** Fewest and most rollouts of a task. */
  repeats: { min: number; max: number };
}

export interface TaskList {
  count: number;
  tasks: number[];
}

export interface Comparison {
  baseline: RunSummary;
  candidate: RunSummary;
  tasks_paired: number;
  /**
   * Paired tasks whose dataset rows differ between the runs apart from the prompt (both runs' materialized inputs
   * read): the same index may not be the same task, so the runs may not come from one dataset.
   */
  tasks_with_different_rows: TaskList;
  only_in_baseline: TaskList;
  only_in_candidate: TaskList;
  /** Means over the paired tasks of the per-task mean rewards. */
  baseline_mean: number | null;
  candidate_mean: number | null;
  difference: { mean: number | null; stderr: number | null; ci95: Interval | null };
  flips: { improved: TaskList; regressed: TaskList; unchanged: number };
  mcnemar: { regressed: number; improved: number; p_value: number } | { not_applicable: string };
  margin: number;
  verdict: Verdict;
}

function summarize(run: RunRewards): RunSummary {
  let min = Infinity;
  let max = 0;
  for (const rewards of run.tasks.values()) {
    min = Math.min(min, rewards.length);
    max = Math.max(max, rewards.length);
  }
  return {
    path: run.path,
    tasks: run.tasks.size,
    rollouts: run.rollouts,
    failed_rollouts: run.failedRollouts,
    repeats: { min: run.tasks.size === 0 ? 0 : min, max },
  };
}

function listOf(tasks: number[]): TaskList {
  return { count: tasks.length, tasks: tasks.sort((a, b) => a - b) };
}

function onlyIn(run: RunRewards, other: RunRewards): TaskList {
  return listOf([...run.tasks.keys()].filter((task) => !other.tasks.has(task)));
}

/** Why McNemar's test does not apply, or undefined when it does: one rollout per paired task, 0/1 rewards. */
function mcnemarBlocker(paired: readonly number[], baseline: RunRewards, candidate: RunRewards): string | undefined {
  if (paired.length === 0) return 'no task is in both runs';
  for (const task of paired) {
    for (const run of [baseline, candidate]) {
      const rewards = run.tasks.get(task)!;
      if (rewards.length !== 1)
        return `task ${task} has ${rewards.length} rollouts in ${run.path} (it needs exactly one)`;
      if (rewards[0] !== 0 && rewards[0] !== 1)
        return `task ${task} has reward ${rewards[0]} in ${run.path} (it needs 0 or 1)`;
    }
  }
  return undefined;
}

function rowsDiffer(task: number, baseline: RunRewards, candidate: RunRewards): boolean {
  const a = baseline.taskIdentity.get(task);
  const b = candidate.taskIdentity.get(task);
  return a !== undefined && b !== undefined && a !== b;
}

export function compareRuns(baseline: RunRewards, candidate: RunRewards, margin: number): Comparison {
  const paired = [...baseline.tasks.keys()].filter((task) => candidate.tasks.has(task)).sort((a, b) => a - b);
  const baselineMeans = paired.map((task) => mean(baseline.tasks.get(task)!));
  const candidateMeans = paired.map((task) => mean(candidate.tasks.get(task)!));
  const differences = paired.map((_, i) => candidateMeans[i]! - baselineMeans[i]!);
  const estimate = studentT(differences);
  const improved = paired.filter((_, i) => differences[i]! > EPSILON);
  const regressed = paired.filter((_, i) => differences[i]! < -EPSILON);
  const blocker = mcnemarBlocker(paired, baseline, candidate);
  const ci95 = estimate?.ci95 ?? null;
  return {
    baseline: summarize(baseline),
    candidate: summarize(candidate),
    tasks_paired: paired.length,
    tasks_with_different_rows: listOf(paired.filter((task) => rowsDiffer(task, baseline, candidate))),
    only_in_baseline: onlyIn(baseline, candidate),
    only_in_candidate: onlyIn(candidate, baseline),
    baseline_mean: paired.length > 0 ? mean(baselineMeans) : null,
    candidate_mean: paired.length > 0 ? mean(candidateMeans) : null,
    difference: { mean: estimate?.mean ?? null, stderr: estimate?.stderr ?? null, ci95 },
    flips: {
      improved: listOf(improved),
      regressed: listOf(regressed),
      unchanged: paired.length - improved.length - regressed.length,
    },
    mcnemar:
      blocker === undefined
        ? {
            regressed: regressed.length,
            improved: improved.length,
            p_value: mcnemarExact(regressed.length, improved.length),
          }
        : { not_applicable: blocker },
    margin,
    verdict: verdictOf(ci95, margin),
  };
}

// -------------------------------------------------------------------------------------------------------------
// Console output

function fixed(value: number | null, signed = false): string {
  if (value === null) return '-';
  const text = value.toFixed(4);
  return signed && value >= 0 ? `+${text}` : text;
}

function shownTasks(list: TaskList, limit = 20): string {
  const shown = list.tasks.slice(0, limit).join(', ');
  return list.count > limit ? `${shown}, … (${list.count - limit} more)` : shown;
}

function runLine(role: string, run: RunSummary): string {
  const repeats = run.repeats.min === run.repeats.max ? `${run.repeats.max}` : `${run.repeats.min}–${run.repeats.max}`;
  return `${role}: ${run.path} (${run.tasks} tasks, ${run.rollouts} rollouts, ${repeats} per task, ${run.failed_rollouts} failed and scored 0)`;
}

const VERDICT_WORDS: Record<Verdict, string> = {
  better: 'the candidate is better: the whole interval lies above the margin',
  worse: 'the candidate is worse: the whole interval lies below minus the margin',
  inconclusive: 'the runs cannot tell: the interval reaches inside the margin',
};

export function describeComparison(result: Comparison): string[] {
  const d = result.difference;
  const lines = [
    runLine('Baseline', result.baseline),
    runLine('Candidate', result.candidate),
    `Tasks paired: ${result.tasks_paired}; only in the baseline: ${result.only_in_baseline.count}; only in the candidate: ${result.only_in_candidate.count}.`,
  ];
  if (result.tasks_with_different_rows.count > 0) {
    lines.push(
      `Warning: ${result.tasks_with_different_rows.count} paired tasks have different dataset rows in the two runs (apart from the prompt): ${shownTasks(result.tasks_with_different_rows)}. Tasks pair by index, so check that both runs used the same input file in the same order.`,
    );
  }
  if (result.only_in_baseline.count > 0) lines.push(`  only in the baseline: ${shownTasks(result.only_in_baseline)}`);
  if (result.only_in_candidate.count > 0)
    lines.push(`  only in the candidate: ${shownTasks(result.only_in_candidate)}`);
  lines.push(
    `Mean reward over the paired tasks: baseline ${fixed(result.baseline_mean)}, candidate ${fixed(result.candidate_mean)}.`,
    d.ci95 === null
      ? `Difference (candidate − baseline): ${fixed(d.mean, true)}; no interval (it needs two paired tasks or more).`
      : `Difference (candidate − baseline): ${fixed(d.mean, true)}, 95% CI [${fixed(d.ci95[0], true)}, ${fixed(d.ci95[1], true)}] (paired Student t over ${result.tasks_paired} tasks, standard error ${fixed(d.stderr)}).`,
    `Tasks that flipped: ${result.flips.improved.count} improved, ${result.flips.regressed.count} regressed, ${result.flips.unchanged} unchanged.`,
  );
  if (result.flips.improved.count > 0) lines.push(`  improved: ${shownTasks(result.flips.improved)}`);
  if (result.flips.regressed.count > 0) lines.push(`  regressed: ${shownTasks(result.flips.regressed)}`);
  const m = result.mcnemar;
  lines.push(
    'p_value' in m
      ? `McNemar exact test: ${m.improved} improved, ${m.regressed} regressed, p = ${m.p_value.toPrecision(4)}.`
      : `McNemar exact test: not applicable (${m.not_applicable}).`,
    `Verdict: ${result.verdict} (margin ${result.margin}): ${VERDICT_WORDS[result.verdict]}.`,
  );
  return lines;
}
