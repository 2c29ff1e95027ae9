/**
 * `gym eval profile` (docs/design.md: "Profile statistics", decision D1): per task and per agent statistics of every
 * numeric field of the completed rollouts, pass@k per agent, and the outcome of every expected rollout — the failures
 * sidecar beside the rollouts file is read, so a failed rollout is counted as failed, not as missing.
 */
import { existsSync } from 'node:fs';
import { ConfigError } from '../errors.js';
import { scanRowsFile, writeFileAtomic } from '../runfiles/jsonl.js';
import { isRolloutKey, RolloutKeyTable } from '../runfiles/key-tables.js';
import {
  agentNameOfRow,
  countsJson,
  LedgerBuilder,
  rewardOf,
  type OutcomeCounts,
  type OutcomeLedger,
} from '../runfiles/outcomes.js';
import { failuresPathFor, profilePaths } from '../runfiles/paths.js';
import {
  compareKeys,
  describeAll,
  describeTasks,
  formatKey,
  keyedResult,
  type KeyedResult,
} from '../metrics/metrics.js';
import { NG } from '../runfiles/ng-keys.js';
import type { Row } from '../runfiles/row.js';
import { computePassMajorityMetrics } from '../metrics/pass-at-k.js';
import { describeUncertainty, type BootstrapOptions } from '../metrics/uncertainty.js';

export interface ProfileOptions {
  inputsPath: string;
  rolloutsPath: string;
  allowPartial: boolean;
  warn: (line: string) => void;
  /** A seeded cluster bootstrap interval (`ci95_bootstrap/*`) next to the Student t one. */
  bootstrap?: BootstrapOptions;
  /** A field of the rollouts (or of their input rows) whose values split each agent's metrics: `<value>/mean/reward`. */
  groupBy?: string;
}

export interface CompletionSummary {
  completed_rollout_rows: number;
  expected_rollout_rows: number;
  completion_pct: number;
  total_tasks: number;
  complete_tasks: number;
  partial_tasks: number;
  tasks_without_rollouts: number;
  failed_rollout_rows: number;
  missing_rollout_rows: number;
  extra_rollout_rows: number;
}

export interface ProfileReport {
  completion: CompletionSummary;
  rolloutCounts: Record<string, number | null>;
  overall: OutcomeCounts;
  groups: Row[];
  agents: Row[];
  ledger: OutcomeLedger;
  outputs: { rewardProfiling: string; agentMetrics: string };
}

const SHOWN_KEYS = 10;

type RolloutKey = { task: number; rollout: number };

function requireFile(file: string, flag: string): void {
  if (!existsSync(file))
    throw new ConfigError(
      `Input file not found: '${file}' (${flag}). Check the path is spelled correctly.`,
      'GYM_CONFIG_INPUT_MISSING',
    );
}

function keyList(keys: RolloutKey[]): string {
  return `[${keys
    .sort(compareKeys)
    .slice(0, SHOWN_KEYS)
    .map((key) => formatKey(key.task, key.rollout))
    .join(', ')}]`;
}

function requireKey(file: string, lineNo: number, row: Row): RolloutKey {
  const task = row[NG.taskIndex];
  const rollout = row[NG.rolloutIndex];
  if (!isRolloutKey(task, rollout)) {
    throw new ConfigError(
      `${file}:${lineNo}: the row has no valid ${NG.taskIndex}/${NG.rolloutIndex} (got ${JSON.stringify(task)}, ${JSON.stringify(rollout)}); profile needs files written by gym eval run.`,
      'GYM_PROFILE_KEY',
    );
  }
  return { task, rollout: rollout as number };
}

interface TaskFacts {
  sample: Row;
  expected: number;
  failedRetryable: number;
  failedTerminal: number;
  missing: number;
  rewardSum: number;
  completed: number;
}

type ProfiledResult = KeyedResult & { agent: string };

/** Every rollout the materialized inputs expect: its agent, its task's facts, and the outcome ledger being built. */
class ExpectedRollouts {
  readonly ledger = new LedgerBuilder();
  readonly tasks = new Map<number, TaskFacts>();
  /** Each expected key's agent, as an index into `agentNames`. */
  private readonly agentOfKey = new RolloutKeyTable();
  private readonly agentNames: string[] = [];
  private readonly agentIds = new Map<string, number>();

  /** One materialized input row, at `file:lineNo`. */
  expect(file: string, lineNo: number, row: Row): void {
    const { task, rollout } = requireKey(file, lineNo, row);
    if (this.ledger.has(task, rollout))
      throw new ConfigError(
        `Duplicate materialized input row for rollout key ${formatKey(task, rollout)} (${file}:${lineNo}).`,
        'GYM_PROFILE_DUPLICATE',
      );
    const agent = agentNameOfRow(row);
    this.ledger.expected(task, rollout, agent);
    if (!this.agentIds.has(agent)) this.agentIds.set(agent, this.agentNames.push(agent) - 1);
    this.agentOfKey.set(task, rollout, this.agentIds.get(agent)!);
    this.factsOf(task, row).expected++;
  }

  /** The agent an input row names for this key; undefined when no input row has the key. */
  agentOf(task: number, rollout: number): string | undefined {
    const agentId = this.agentOfKey.get(task, rollout);
    return agentId === undefined ? undefined : this.agentNames[agentId]!;
  }

  /** A task's facts, begun from its first input row (without the key) as the task's sample. */
  private factsOf(task: number, row: Row): TaskFacts {
    let facts = this.tasks.get(task);
    if (!facts) {
      const sample = { ...row };
      delete sample[NG.taskIndex];
      delete sample[NG.rolloutIndex];
      facts = { sample, expected: 0, failedRetryable: 0, failedTerminal: 0, missing: 0, rewardSum: 0, completed: 0 };
      this.tasks.set(task, facts);
    }
    return facts;
  }
}

async function readInputs(inputsPath: string): Promise<ExpectedRollouts> {
  const expected = new ExpectedRollouts();
  const inputs = await scanRowsFile(inputsPath, (row, line) => expected.expect(inputsPath, line.lineNo, row));
  if (inputs.torn)
    throw new ConfigError(
      `${inputsPath}:${inputs.torn.lineNo}: the last line is incomplete; this materialized inputs file is damaged.`,
      'GYM_PROFILE_TORN',
    );
  return expected;
}

/** The completed rollouts, each recorded in the ledger; a row no input expects fails the profile (after the scan). */
async function readRollouts(
  rolloutsPath: string,
  expected: ExpectedRollouts,
  warn: (line: string) => void,
): Promise<ProfiledResult[]> {
  const results: ProfiledResult[] = [];
  const extra: RolloutKey[] = [];
  let extraCount = 0;
  const seen = new RolloutKeyTable();
  const rollouts = await scanRowsFile(rolloutsPath, (row, line) => {
    const { task, rollout } = requireKey(rolloutsPath, line.lineNo, row);
    if (seen.get(task, rollout) !== undefined)
      throw new ConfigError(
        `Duplicate result row for rollout key ${formatKey(task, rollout)} (${rolloutsPath}:${line.lineNo}).`,
        'GYM_PROFILE_DUPLICATE',
      );
    seen.set(task, rollout, 1);
    const agent = expected.agentOf(task, rollout);
    if (agent === undefined) {
      extraCount++;
      if (extra.length < SHOWN_KEYS) extra.push({ task, rollout });
      return;
    }
    expected.ledger.completed(task, rollout, agent, rewardOf(row));
    results.push({ ...keyedResult(row, task, rollout), agent });
  });
  if (rollouts.torn)
    warn(`Ignoring the torn last line of ${rolloutsPath} (line ${rollouts.torn.lineNo}, left by an interrupted run).`);
  if (extraCount > 0) {
    throw new ConfigError(
      `Rollout results contain rows with no matching materialized input rows. Found ${extraCount} extra rollout rows. Extra rollout keys: ${keyList(extra)}. Check that --inputs and --rollouts come from the same run.`,
      'GYM_PROFILE_EXTRA',
    );
  }
  return results;
}

/** The failures sidecar, when there is one: each failure of an expected rollout recorded in the ledger. */
async function readFailures(sidecar: string, ledger: LedgerBuilder, warn: (line: string) => void): Promise<void> {
  if (!existsSync(sidecar)) return;
  const failures = await scanRowsFile(sidecar, (row) => {
    const task = row[NG.taskIndex];
    const rollout = row[NG.rolloutIndex];
    if (!isRolloutKey(task, rollout) || !ledger.isExpected(task, rollout as number)) return;
    ledger.failure(task, rollout as number, agentNameOfRow(row), row[NG.failureTerminal] === true);
  });
  if (failures.torn)
    warn(`Ignoring the torn last line of ${sidecar} (line ${failures.torn.lineNo}, left by an interrupted run).`);
}

/** Counts each task's failed and missing rollouts; missing ones fail the profile unless partial rollouts are allowed. */
function countUnfinished(expected: ExpectedRollouts, options: ProfileOptions, sidecar: string): void {
  const missing: RolloutKey[] = [];
  let missingCount = 0;
  const { ledger, tasks } = expected;
  ledger.keys.forEach((task, rollout) => {
    const outcome = ledger.outcomeOf(task, rollout)!;
    const facts = tasks.get(task)!;
    if (outcome === 'failed_retryable') facts.failedRetryable++;
    else if (outcome === 'failed_terminal') facts.failedTerminal++;
    else if (outcome === 'missing') {
      facts.missing++;
      missingCount++;
      if (missing.length < 1000) missing.push({ task, rollout });
    }
  });
  if (missingCount > 0 && !options.allowPartial) {
    throw new ConfigError(
      `Materialized input rows and rollout results do not have matching rollout keys. Missing rollout results for ${missingCount} materialized input rows (neither in ${options.rolloutsPath} nor in ${sidecar}). Missing rollout keys: ${keyList(missing)}.\n\nUse ++allow_partial_rollouts=True to profile completed rollouts from a partial collection.`,
      'GYM_PROFILE_MISSING',
    );
  }
}

/** Sorts the results by key and adds each to its task's completed count and reward sum. */
function countCompleted(results: ProfiledResult[], tasks: Map<number, TaskFacts>): void {
  results.sort(compareKeys);
  for (const entry of results) {
    const facts = tasks.get(entry.task)!;
    facts.completed++;
    facts.rewardSum += rewardOf(entry.result);
  }
}

/** One reward-profiling line per task with a completed rollout. */
function taskGroups(results: ProfiledResult[], tasks: Map<number, TaskFacts>): Row[] {
  return describeTasks(results).map((group) => {
    const facts = tasks.get(group.task)!;
    // A task appears here only with a completed rollout, so `attempted` is never 0.
    const attempted = facts.completed + facts.failedRetryable + facts.failedTerminal;
    return {
      [NG.taskIndex]: group.task,
      ...group.stats,
      mean_reward_failures_as_zero: facts.rewardSum / attempted,
      sample: facts.sample,
      num_rollouts: group.entries.length,
      expected_num_rollouts: facts.expected,
      failed_retryable_num_rollouts: facts.failedRetryable,
      failed_terminal_num_rollouts: facts.failedTerminal,
      missing_num_rollouts: facts.missing,
      reward_profile_completion_pct: facts.expected > 0 ? (100 * group.entries.length) / facts.expected : 100,
      rollout_infos: group.rolloutInfos,
    };
  });
}

/** Statistics with their intervals, then pass@k and pass^k, over one set of results (an agent's, or a subset). */
function metricsOf(entries: readonly ProfiledResult[], bootstrap: BootstrapOptions | undefined): Row {
  const byTask = new Map<number, Row[]>();
  for (const entry of entries) {
    const list = byTask.get(entry.task) ?? [];
    list.push(entry.result);
    byTask.set(entry.task, list);
  }
  return {
    ...describeAll(entries),
    ...describeUncertainty(entries, bootstrap),
    ...computePassMajorityMetrics([...byTask.values()], { passHatK: true }).metrics,
    ...modelCallTotals(entries),
  };
}

/**
 * The model calls recorded on the rows (`ng_model_call_capture`, a remote agent with `model_server`): counted and
 * summed, unknown counts left out, so `null` means no row knew. Absent when no row carries a capture.
 */
function modelCallTotals(entries: readonly ProfiledResult[]): Row {
  const fields = ['tokens_in', 'tokens_out', 'tokens_reasoning', 'tokens_total', 'cached_tokens'] as const;
  const totals: Record<string, number | null> = { rollouts: 0, num_calls: 0, failed_calls: 0 };
  for (const field of fields) totals[field] = null;
  let latencySum = 0;
  let latencyCount = 0;
  for (const { result } of entries) {
    const calls = (result.ng_model_call_capture as { calls?: unknown } | undefined)?.calls;
    if (!Array.isArray(calls)) continue;
    totals.rollouts! += 1;
    for (const call of calls as Record<string, unknown>[]) {
      totals.num_calls! += 1;
      if (typeof call.error_category === 'string') totals.failed_calls! += 1;
      if (typeof call.latency_total_ms === 'number') {
        latencySum += call.latency_total_ms;
        latencyCount++;
      }
      for (const field of fields) {
        if (typeof call[field] === 'number') totals[field] = (totals[field] ?? 0) + call[field];
      }
    }
  }
  totals.mean_latency_ms = latencyCount > 0 ? latencySum / latencyCount : null;
  return totals.rollouts === 0 ? {} : { model_calls: totals };
}

/** The value of the grouping field for a result: the rollout's own field, else its task's input row's. */
function groupValueOf(entry: ProfiledResult, field: string, tasks: Map<number, TaskFacts>): string {
  const own = entry.result[field];
  const value = own ?? tasks.get(entry.task)?.sample[field];
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return String(value);
  return 'none';
}

/** Each value of the grouping field's metrics, keys prefixed with the value (as the reference's subset metrics are). */
function subsetMetrics(
  entries: readonly ProfiledResult[],
  options: ProfileOptions,
  tasks: Map<number, TaskFacts>,
): Row {
  const field = options.groupBy;
  if (field === undefined) return {};
  const subsets = new Map<string, ProfiledResult[]>();
  for (const entry of entries) {
    const value = groupValueOf(entry, field, tasks);
    const list = subsets.get(value) ?? [];
    list.push(entry);
    subsets.set(value, list);
  }
  const out: Row = {};
  for (const value of [...subsets.keys()].sort()) {
    for (const [key, metric] of Object.entries(metricsOf(subsets.get(value)!, options.bootstrap))) {
      if (key !== 'per_sample_aggregate') out[`${value}/${key}`] = metric;
    }
  }
  return out;
}

/** One agent-metrics entry per agent: statistics with intervals, pass@k over its tasks, and its outcome counts. */
function agentEntries(
  results: ProfiledResult[],
  ledger: OutcomeLedger,
  options: ProfileOptions,
  tasks: Map<number, TaskFacts>,
): Row[] {
  return ledger.agents().map((agent) => {
    const mine = results.filter((entry) => entry.agent === agent);
    return {
      ...metricsOf(mine, options.bootstrap),
      ...subsetMetrics(mine, options, tasks),
      rollout_counts: countsJson(ledger.counts(agent)),
      agent_ref: { name: agent },
    };
  });
}

function completionOf(overall: OutcomeCounts, tasks: Map<number, TaskFacts>): CompletionSummary {
  let complete = 0;
  let partial = 0;
  let without = 0;
  for (const facts of tasks.values()) {
    if (facts.completed === facts.expected) complete++;
    else if (facts.completed > 0) partial++;
    else without++;
  }
  return {
    completed_rollout_rows: overall.completed,
    expected_rollout_rows: overall.expected,
    completion_pct: overall.expected > 0 ? (100 * overall.completed) / overall.expected : 100,
    total_tasks: tasks.size,
    complete_tasks: complete,
    partial_tasks: partial,
    tasks_without_rollouts: without,
    failed_rollout_rows: overall.failedRetryable + overall.failedTerminal,
    missing_rollout_rows: overall.missing,
    extra_rollout_rows: 0,
  };
}

export async function profileRollouts(options: ProfileOptions): Promise<ProfileReport> {
  const { inputsPath, rolloutsPath } = options;
  requireFile(inputsPath, '--inputs');
  requireFile(rolloutsPath, '--rollouts');
  const expected = await readInputs(inputsPath);
  const results = await readRollouts(rolloutsPath, expected, options.warn);
  const sidecar = failuresPathFor(rolloutsPath);
  await readFailures(sidecar, expected.ledger, options.warn);
  countUnfinished(expected, options, sidecar);
  countCompleted(results, expected.tasks);
  const ledger = expected.ledger.build();

  const groups = taskGroups(results, expected.tasks);
  const agents = agentEntries(results, ledger, options, expected.tasks);
  const overall = ledger.total();
  const completion = completionOf(overall, expected.tasks);

  const outputs = profilePaths(rolloutsPath);
  writeFileAtomic(outputs.rewardProfiling, groups.map((group) => `${JSON.stringify(group)}\n`).join(''));
  writeFileAtomic(outputs.agentMetrics, JSON.stringify(agents));
  return { completion, rolloutCounts: countsJson(overall), overall, groups, agents, ledger, outputs };
}

// -------------------------------------------------------------------------------------------------------------
// Console output

const STAT_NAMES = ['mean', 'max', 'min', 'median', 'std'] as const;

function num(value: unknown): string {
  if (typeof value !== 'number') return '-';
  if (Number.isInteger(value)) return String(value);
  return Math.abs(value) >= 1e5 ? value.toExponential(3) : value.toFixed(4);
}

/** Columns of an agent entry: `mean/<col>` names, in order. */
function statColumns(entry: Row): string[] {
  return Object.keys(entry)
    .filter((key) => key.startsWith('mean/'))
    .map((key) => key.slice('mean/'.length));
}

function table(rows: string[][]): string[] {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  return rows.map((row) =>
    row
      .map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!)))
      .join('  ')
      .trimEnd(),
  );
}

function interval(value: unknown): string {
  if (!Array.isArray(value) || value.length !== 2) return '-';
  return `[${num(value[0])}, ${num(value[1])}]`;
}

/** The reward's interval in one sentence: what it is centred on and how many tasks it rests on. */
function rewardIntervalLine(agent: Row, prefix = ''): string | undefined {
  const ci = agent[`${prefix}ci95/reward`];
  const tasks = agent[`${prefix}num_tasks`];
  if (agent[`${prefix}mean/reward`] === undefined) return undefined;
  if (ci === null || ci === undefined)
    return `  reward: no interval from ${num(tasks)} task (it needs two tasks or more).`;
  const boot = agent[`${prefix}ci95_bootstrap/reward`];
  return (
    `  reward 95% CI ${interval(ci)} (Student t over ${num(tasks)} task means, standard error ${num(agent[`${prefix}stderr/reward`])})` +
    (boot === undefined ? '.' : `; bootstrap ${interval(boot)}.`)
  );
}

function agentLines(agent: Row, report: ProfileReport): string[] {
  const name = (agent.agent_ref as { name: string }).name;
  const counts = report.ledger.counts(name);
  const attempted = counts.completed + counts.failedRetryable + counts.failedTerminal;
  const lines = [
    '',
    `Agent ${name}: ${counts.tasks} tasks, ${counts.expected} rollouts expected: ${counts.completed} completed, ${counts.failedRetryable + counts.failedTerminal} failed (${counts.failedRetryable} retryable, ${counts.failedTerminal} terminal), ${counts.missing} missing.`,
    `  mean reward ${num(counts.completed > 0 ? counts.rewardSum / counts.completed : undefined)} over ${counts.completed} completed; ${num(attempted > 0 ? counts.rewardSum / attempted : undefined)} over ${attempted} attempted with failures counted as 0.`,
  ];
  const rewardLine = rewardIntervalLine(agent);
  if (rewardLine) lines.push(rewardLine);
  const columns = statColumns(agent);
  if (columns.length > 0) {
    const rows = [
      ['  metric', 'mean', 'ci95', ...STAT_NAMES.slice(1)],
      ...columns.map((column) => [
        `  ${column}`,
        num(agent[`mean/${column}`]),
        interval(agent[`ci95/${column}`]),
        ...STAT_NAMES.slice(1).map((stat) => num(agent[`${stat}/${column}`])),
      ]),
    ];
    lines.push(...table(rows));
  }
  const calls = agent.model_calls as Record<string, number | null> | undefined;
  if (calls) {
    lines.push(
      `  model calls: ${calls.num_calls} over ${calls.rollouts} rollouts (${calls.failed_calls} failed); tokens in ${num(calls.tokens_in)}, out ${num(calls.tokens_out)}, cached ${num(calls.cached_tokens)}, reasoning ${num(calls.tokens_reasoning)}; mean latency ${num(calls.mean_latency_ms)} ms`,
    );
  }
  const passKeys = Object.keys(agent).filter((key) => /^pass[@^]\d+\/|^pass@1\[avg-of-\d+\]\/[^/]+$/.test(key));
  if (passKeys.length > 0) lines.push(...table(passKeys.map((key) => [`  ${key}`, num(agent[key])])));
  const subsets = Object.keys(agent)
    .filter((key) => key.endsWith('/num_tasks'))
    .map((key) => key.slice(0, -'num_tasks'.length));
  for (const prefix of subsets) {
    lines.push(
      `  ${prefix.slice(0, -1)}: mean reward ${num(agent[`${prefix}mean/reward`])} over ${num(agent[`${prefix}num_rollouts`])} rollouts of ${num(agent[`${prefix}num_tasks`])} tasks`,
    );
    const line = rewardIntervalLine(agent, prefix);
    if (line) lines.push(`  ${line}`);
  }
  return lines;
}

export function describeProfile(report: ProfileReport): string[] {
  const c = report.completion;
  const lines = [
    'Profiling outputs:',
    `Reward profile completion: ${c.completed_rollout_rows}/${c.expected_rollout_rows} rollout rows (${c.completion_pct.toFixed(2)}%)`,
    `Input rows: ${c.total_tasks} total; ${c.complete_tasks} complete; ${c.partial_tasks} partial; ${c.tasks_without_rollouts} without rollouts dropped from output.`,
    `Reward profiling outputs: ${report.outputs.rewardProfiling}`,
    `Agent-level metrics: ${report.outputs.agentMetrics}`,
  ];
  for (const agent of report.agents) lines.push(...agentLines(agent, report));
  return lines;
}

/** The one JSON object `--json` prints. */
export function profileJson(report: ProfileReport): Record<string, unknown> {
  return {
    completion: report.completion,
    rollout_counts: report.rolloutCounts,
    agents: report.agents,
    outputs: { reward_profiling: report.outputs.rewardProfiling, agent_metrics: report.outputs.agentMetrics },
  };
}
