/**
 * Aggregate metrics over rollout results: the body of every `/aggregate_metrics` endpoint
 * (docs/design.md, "The /aggregate_metrics body") and the engine of `gym eval profile` ("Profile statistics").
 *
 * Results are grouped by task (`_ng_task_index`) into `group_level_metrics`, and described as a whole into
 * `agent_metrics`; `key_metrics` are the `mean/*` entries. An environment may add its own metrics through a
 * `TaskMetricsHook`, which sees the results grouped by task, tasks ascending, rollouts in rollout order.
 */
import { NG } from '../runfiles/ng-keys.js';
import type { Row } from '../runfiles/row.js';
import { columnsOf, describe, numericFields, usageFields, type NumericRecord } from './stats.js';

/**
 * An environment's extra metrics. The returned entries are merged into `agent_metrics`; a returned
 * `per_task_metrics: [{_ng_task_index, ...}]` list is merged into the matching `group_level_metrics` entries.
 */
export type TaskMetricsHook = (tasks: Row[][]) => Record<string, unknown>;

export interface AggregateMetrics {
  group_level_metrics: Row[];
  agent_metrics: Record<string, unknown>;
  key_metrics: Record<string, unknown>;
}

/** One result placed by its rollout key, with its numeric view. */
export interface KeyedResult {
  task: number;
  rollout: number;
  result: Row;
  values: NumericRecord;
}

/** The rollout key, which is never a statistic's column. */
export const INDEX_COLUMNS: ReadonlySet<string> = new Set([NG.taskIndex, NG.rolloutIndex]);

export function keyedResult(result: Row, task: number, rollout: number): KeyedResult {
  return { task, rollout, result, values: numericFields(result) };
}

export function compareKeys(a: { task: number; rollout: number }, b: { task: number; rollout: number }): number {
  return a.task - b.task || a.rollout - b.rollout;
}

/** `(t, r)` as the reference prints a rollout key. */
export function formatKey(task: number, rollout: number): string {
  return `(${task}, ${rollout})`;
}

/**
 * `rollout_infos` entry: `rollout_id`, the two indices, `reward`, the numeric usage fields, then the other
 * numeric fields.
 */
function rolloutInfo(entry: KeyedResult): Row {
  const info: Row = {
    rollout_id: `${entry.task}:${entry.rollout}`,
    [NG.taskIndex]: entry.task,
    [NG.rolloutIndex]: entry.rollout,
  };
  if (entry.values.reward !== undefined) info.reward = entry.values.reward;
  for (const [key, value] of Object.entries(usageFields(entry.result))) info[key] ??= value;
  for (const [key, value] of Object.entries(entry.values)) info[key] ??= value;
  return info;
}

export interface TaskGroup {
  task: number;
  /** Rollouts of this task in rollout order. */
  entries: KeyedResult[];
  /** `mean/*`, `max/*`, … over the task's rollouts. */
  stats: Record<string, number>;
  rolloutInfos: Row[];
}

/**
 * Group sorted results by task and describe each group. Columns are the union over *all* results, so a column
 * absent from one task is simply missing there (as in one pandas frame grouped by task).
 */
export function describeTasks(sorted: readonly KeyedResult[]): TaskGroup[] {
  const columns = columnsOf(
    sorted.map((entry) => entry.values),
    INDEX_COLUMNS,
  );
  const groups: TaskGroup[] = [];
  for (const entry of sorted) {
    const last = groups[groups.length - 1];
    if (last && last.task === entry.task) last.entries.push(entry);
    else groups.push({ task: entry.task, entries: [entry], stats: {}, rolloutInfos: [] });
  }
  for (const group of groups) {
    group.stats = describe(
      group.entries.map((entry) => entry.values),
      columns,
    );
    group.rolloutInfos = group.entries.map(rolloutInfo);
  }
  return groups;
}

/** `mean/*`, `max/*`, … over a whole set of results (an agent's). */
export function describeAll(entries: readonly KeyedResult[]): Record<string, number> {
  const records = entries.map((entry) => entry.values);
  return describe(records, columnsOf(records, INDEX_COLUMNS));
}

/** Sort by key and refuse duplicates: two results for one rollout key mean overlapping inputs. */
export function sortUnique(entries: KeyedResult[]): KeyedResult[] {
  const sorted = [...entries].sort(compareKeys);
  for (let i = 1; i < sorted.length; i++) {
    const a = sorted[i - 1]!;
    const b = sorted[i]!;
    if (a.task === b.task && a.rollout === b.rollout) {
      throw new Error(`Duplicate result row for rollout key ${formatKey(b.task, b.rollout)}`);
    }
  }
  return sorted;
}

function indexOf(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : 0;
}

/**
 * The `/aggregate_metrics` computation. Results are put in (task, rollout) order first, so the answer does not
 * depend on the order they arrive in (a sharded collection aggregates to the same numbers as a single run).
 */
export function computeAggregateMetrics(
  verifyResponses: readonly Row[],
  computeMetrics?: TaskMetricsHook,
): AggregateMetrics {
  if (verifyResponses.length === 0) return { group_level_metrics: [], agent_metrics: {}, key_metrics: {} };
  const sorted = sortUnique(
    verifyResponses.map((vr) => keyedResult(vr, indexOf(vr[NG.taskIndex]), indexOf(vr[NG.rolloutIndex]))),
  );
  const groups = describeTasks(sorted);

  const groupLevel: Row[] = groups.map((group) => ({
    [NG.taskIndex]: group.task,
    ...group.stats,
    sample: { agent_ref: { name: 'agent' } },
    num_rollouts: group.entries.length,
    expected_num_rollouts: group.entries.length,
    missing_num_rollouts: 0,
    reward_profile_completion_pct: 100,
    rollout_infos: group.rolloutInfos,
  }));
  const agentMetrics: Record<string, unknown> = { ...describeAll(sorted) };

  if (computeMetrics) {
    const custom = { ...computeMetrics(groups.map((group) => group.entries.map((entry) => entry.result))) };
    const perTask = custom.per_task_metrics;
    delete custom.per_task_metrics;
    if (Array.isArray(perTask)) {
      const byTask = new Map<unknown, Row>();
      for (const item of perTask)
        if (item && typeof item === 'object') byTask.set((item as Row)[NG.taskIndex], item as Row);
      for (const group of groupLevel) {
        const extra = byTask.get(group[NG.taskIndex]);
        if (!extra) continue;
        for (const [key, value] of Object.entries(extra)) if (key !== NG.taskIndex) group[key] = value;
      }
    }
    Object.assign(agentMetrics, custom);
  }
  return { group_level_metrics: groupLevel, agent_metrics: agentMetrics, key_metrics: keyMetrics(agentMetrics) };
}

/** The headline metrics: every `mean/*` entry. */
export function keyMetrics(agentMetrics: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(agentMetrics).filter(([key]) => key.startsWith('mean/')));
}
