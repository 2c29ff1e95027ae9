/**
 * Honest denominators (decision D1): for every agent and overall, how many tasks and rollouts were expected, how
 * many completed, failed (retryable / terminal) or are missing, and the mean reward both over completed rollouts
 * and with failures counted as 0. Every summary — the end of `gym eval run`, `gym eval profile`, the aggregate
 * metrics file — reports these, so no number is silently computed over a smaller sample.
 */
import { isPlainObject } from '../config/types.js';
import { RolloutKeyTable, TaskCounters } from './key-tables.js';

export type Outcome = 'completed' | 'failed_retryable' | 'failed_terminal' | 'missing';

export interface OutcomeCounts {
  tasks: number;
  expected: number;
  completed: number;
  failedRetryable: number;
  failedTerminal: number;
  missing: number;
  /** Sum of `reward` over completed rollouts. */
  rewardSum: number;
}

const FIELD: Record<Outcome, 'completed' | 'failedRetryable' | 'failedTerminal' | 'missing'> = {
  completed: 'completed',
  failed_retryable: 'failedRetryable',
  failed_terminal: 'failedTerminal',
  missing: 'missing',
};

function emptyCounts(): OutcomeCounts {
  return { tasks: 0, expected: 0, completed: 0, failedRetryable: 0, failedTerminal: 0, missing: 0, rewardSum: 0 };
}

export function rewardOf(row: Record<string, unknown>): number {
  const reward = row.reward;
  if (typeof reward === 'number' && Number.isFinite(reward)) return reward;
  if (typeof reward === 'boolean') return reward ? 1 : 0;
  return 0;
}

export function agentNameOfRow(row: Record<string, unknown>): string {
  const ref = row.agent_ref;
  return isPlainObject(ref) && typeof ref.name === 'string' ? ref.name : '(no agent_ref)';
}

/** Per-agent outcome counts, updated as rollouts move between outcomes. */
export class OutcomeLedger {
  private readonly byAgent = new Map<string, OutcomeCounts>();

  private of(agent: string): OutcomeCounts {
    let counts = this.byAgent.get(agent);
    if (!counts) this.byAgent.set(agent, (counts = emptyCounts()));
    return counts;
  }

  addTask(agent: string): void {
    this.of(agent).tasks++;
  }

  /** One more expected rollout, currently in `outcome`. */
  expect(agent: string, outcome: Outcome, reward = 0): void {
    const counts = this.of(agent);
    counts.expected++;
    counts[FIELD[outcome]]++;
    if (outcome === 'completed') counts.rewardSum += reward;
  }

  move(agent: string, from: Outcome, to: Outcome, reward = 0): void {
    const counts = this.of(agent);
    counts[FIELD[from]]--;
    counts[FIELD[to]]++;
    if (to === 'completed') counts.rewardSum += reward;
  }

  addReward(agent: string, reward: number): void {
    this.of(agent).rewardSum += reward;
  }

  agents(): string[] {
    return [...this.byAgent.keys()].sort();
  }

  counts(agent: string): OutcomeCounts {
    return { ...this.of(agent) };
  }

  total(): OutcomeCounts {
    const total = emptyCounts();
    for (const counts of this.byAgent.values()) {
      for (const key of Object.keys(total) as Array<keyof OutcomeCounts>) total[key] += counts[key];
    }
    return total;
  }
}

export function failed(counts: OutcomeCounts): number {
  return counts.failedRetryable + counts.failedTerminal;
}

/** Mean reward over completed rollouts (null when none completed). */
export function meanRewardCompleted(counts: OutcomeCounts): number | null {
  return counts.completed > 0 ? counts.rewardSum / counts.completed : null;
}

/** Mean reward over completed and failed rollouts, failures counting 0 (null when none was attempted). */
export function meanRewardFailuresAsZero(counts: OutcomeCounts): number | null {
  const attempted = counts.completed + failed(counts);
  return attempted > 0 ? counts.rewardSum / attempted : null;
}

/** The counts as written into JSON artefacts. */
export function countsJson(counts: OutcomeCounts): Record<string, number | null> {
  return {
    tasks: counts.tasks,
    expected_rollouts: counts.expected,
    completed_rollouts: counts.completed,
    failed_retryable_rollouts: counts.failedRetryable,
    failed_terminal_rollouts: counts.failedTerminal,
    missing_rollouts: counts.missing,
    mean_reward_completed: meanRewardCompleted(counts),
    mean_reward_failures_as_zero: meanRewardFailuresAsZero(counts),
  };
}

const fmt = (value: number | null): string => (value === null ? 'n/a' : value.toFixed(4));

/** Two lines: the denominators, then both mean rewards. */
export function describeCounts(counts: OutcomeCounts): string[] {
  return [
    `${counts.tasks} tasks, ${counts.expected} rollouts expected: ${counts.completed} completed, ${failed(counts)} failed (${counts.failedRetryable} retryable, ${counts.failedTerminal} terminal), ${counts.missing} missing.`,
    `Mean reward ${fmt(meanRewardCompleted(counts))} over ${counts.completed} completed; ${fmt(meanRewardFailuresAsZero(counts))} over ${counts.completed + failed(counts)} attempted with failures counted as 0.`,
  ];
}

/** The run summary: overall, then per agent when there are several. */
export function describeLedger(ledger: OutcomeLedger): string[] {
  const agents = ledger.agents();
  const lines = describeCounts(ledger.total()).map((line, i) => (i === 0 ? `Rollouts: ${line}` : line));
  if (agents.length > 1) {
    for (const agent of agents) {
      const [first, second] = describeCounts(ledger.counts(agent));
      lines.push(`  ${agent}: ${first}`, `  ${' '.repeat(agent.length)}  ${second}`);
    }
  }
  return lines;
}

// -------------------------------------------------------------------------------------------------------------
// Building a ledger from files (profile, aggregate): materialized inputs, rollouts and failure sidecars.

const EXPECTED = 1;
const DONE = 2;
const FAILED = 4;
const TERMINAL = 8;
const AGENT_SHIFT = 16;

/**
 * Collects per-key facts from artefact files, then settles each key into one outcome. A key counts as expected
 * when the materialized inputs list it, or when any rollout or failure line carries it (it cannot be missing then).
 */
export class LedgerBuilder {
  readonly keys = new RolloutKeyTable();
  private readonly agentIds = new Map<string, number>();
  private readonly agentNames: string[] = [];
  private readonly rewardByAgent = new Map<string, number>();

  private agentId(agent: string): number {
    let id = this.agentIds.get(agent);
    if (id === undefined) {
      id = this.agentNames.length;
      this.agentIds.set(agent, id);
      this.agentNames.push(agent);
    }
    return id;
  }

  private mark(task: number, rollout: number, agent: string, flags: number): number {
    const state = this.keys.get(task, rollout);
    const next = state === undefined ? (this.agentId(agent) << AGENT_SHIFT) | flags : state | flags;
    this.keys.set(task, rollout, next >>> 0);
    return state ?? 0;
  }

  expected(task: number, rollout: number, agent: string): void {
    this.mark(task, rollout, agent, EXPECTED);
  }

  has(task: number, rollout: number): boolean {
    return this.keys.get(task, rollout) !== undefined;
  }

  isExpected(task: number, rollout: number): boolean {
    return ((this.keys.get(task, rollout) ?? 0) & EXPECTED) !== 0;
  }

  /** A success; a key succeeding twice counts once. Returns false for such a duplicate. */
  completed(task: number, rollout: number, agent: string, reward: number): boolean {
    const before = this.mark(task, rollout, agent, DONE);
    if (before & DONE) return false;
    this.rewardByAgent.set(agent, (this.rewardByAgent.get(agent) ?? 0) + reward);
    return true;
  }

  failure(task: number, rollout: number, agent: string, terminal: boolean): void {
    this.mark(task, rollout, agent, FAILED | (terminal ? TERMINAL : 0));
  }

  outcomeOf(task: number, rollout: number): Outcome | undefined {
    const state = this.keys.get(task, rollout);
    return state === undefined ? undefined : outcomeOfState(state);
  }

  build(): OutcomeLedger {
    const ledger = new OutcomeLedger();
    const tasksByAgent = new Map<string, TaskCounters>();
    this.keys.forEach((task, _rollout, state) => {
      const agent = this.agentNames[state >>> AGENT_SHIFT]!;
      let tasks = tasksByAgent.get(agent);
      if (!tasks) tasksByAgent.set(agent, (tasks = new TaskCounters()));
      if (tasks.next(task) === 0) ledger.addTask(agent);
      ledger.expect(agent, outcomeOfState(state));
    });
    for (const [agent, reward] of this.rewardByAgent) ledger.addReward(agent, reward);
    return ledger;
  }
}

function outcomeOfState(state: number): Outcome {
  if (state & DONE) return 'completed';
  if (state & TERMINAL) return 'failed_terminal';
  if (state & FAILED) return 'failed_retryable';
  return 'missing';
}
