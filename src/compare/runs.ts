/**
 * One side of `gym eval compare`: a run's rollouts file and its failures sidecar, read into one reward per rollout
 * (docs/deciding.md). A rollout's reward is its success row's; a rollout with only failure rows scored 0 (the agent
 * did not deliver it), as the viewer's compare page scores it. Rollouts are keyed by `_ng_task_index` and
 * `_ng_rollout_index`, so two runs of the same materialized inputs pair task by task.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { ConfigError } from '../errors.js';
import { scanRowsFile } from '../runfiles/jsonl.js';
import { isRolloutKey, RolloutKeyTable } from '../runfiles/key-tables.js';
import { NG } from '../runfiles/ng-keys.js';
import { rewardOf } from '../runfiles/outcomes.js';
import { failuresPathFor, materializedInputsPathFor } from '../runfiles/paths.js';

/** What one run says about each task: its rollouts' rewards, in no particular order. */
export interface RunRewards {
  path: string;
  /** Task index → rewards of its rollouts. */
  tasks: Map<number, number[]>;
  rollouts: number;
  /** Rollouts scored 0 because they only failed. */
  failedRollouts: number;
  /**
   * Per task, a digest of what identifies the task apart from its prompt (the dataset row's other fields: the
   * expected answer, the verifier's inputs), from the run's materialized inputs; empty when the run has none.
   */
  taskIdentity: Map<number, string>;
}

/** Rewards as read, before grouping: a success wins over failures of the same rollout, whichever line comes first. */
class RewardTable {
  private readonly slots = new RolloutKeyTable();
  private rewards = new Float64Array(1024);
  private succeeded = new Uint8Array(1024);
  private count = 0;

  record(task: number, rollout: number, reward: number, success: boolean): void {
    const slot = this.slots.get(task, rollout);
    if (slot === undefined) {
      this.grow();
      this.slots.set(task, rollout, this.count);
      this.rewards[this.count] = reward;
      this.succeeded[this.count++] = success ? 1 : 0;
    } else if (success && this.succeeded[slot] === 0) {
      this.rewards[slot] = reward;
      this.succeeded[slot] = 1;
    }
  }

  private grow(): void {
    if (this.count < this.rewards.length) return;
    const rewards = new Float64Array(this.rewards.length * 2);
    rewards.set(this.rewards);
    const succeeded = new Uint8Array(this.succeeded.length * 2);
    succeeded.set(this.succeeded);
    this.rewards = rewards;
    this.succeeded = succeeded;
  }

  toRun(path: string, taskIdentity: Map<number, string>): RunRewards {
    const tasks = new Map<number, number[]>();
    let failed = 0;
    this.slots.forEach((task, _rollout, slot) => {
      const list = tasks.get(task) ?? [];
      list.push(this.rewards[slot]!);
      tasks.set(task, list);
      if (this.succeeded[slot] === 0) failed++;
    });
    return { path, tasks, rollouts: this.count, failedRollouts: failed, taskIdentity };
  }
}

function keyOf(file: string, lineNo: number, row: Record<string, unknown>): { task: number; rollout: number } {
  const task = row[NG.taskIndex];
  const rollout = row[NG.rolloutIndex];
  if (!isRolloutKey(task, rollout)) {
    throw new ConfigError(
      `${file}:${lineNo}: the row has no valid ${NG.taskIndex}/${NG.rolloutIndex} (got ${JSON.stringify(task)}, ${JSON.stringify(rollout)}); gym eval compare needs rollouts files written by gym eval run.`,
      'GYM_COMPARE_KEY',
    );
  }
  return { task, rollout: rollout as number };
}

/** A run's rewards per task, from `<stem>.jsonl` and, when present, `<stem>_failures.jsonl`. */
export async function readRunRewards(
  rolloutsPath: string,
  role: string,
  warn: (line: string) => void,
): Promise<RunRewards> {
  if (!existsSync(rolloutsPath)) {
    throw new ConfigError(
      `The ${role} rollouts file '${rolloutsPath}' does not exist. Pass the <stem>.jsonl a gym eval run wrote.`,
      'GYM_CONFIG_INPUT_MISSING',
    );
  }
  const table = new RewardTable();
  const main = await scanRowsFile(rolloutsPath, (row, line) => {
    const { task, rollout } = keyOf(rolloutsPath, line.lineNo, row);
    table.record(task, rollout, rewardOf(row), true);
  });
  if (main.torn) warn(`Ignoring the torn last line of ${rolloutsPath} (line ${main.torn.lineNo}).`);
  const sidecar = failuresPathFor(rolloutsPath);
  if (existsSync(sidecar)) {
    const failures = await scanRowsFile(sidecar, (row, line) => {
      const { task, rollout } = keyOf(sidecar, line.lineNo, row);
      table.record(task, rollout, 0, false);
    });
    if (failures.torn) warn(`Ignoring the torn last line of ${sidecar} (line ${failures.torn.lineNo}).`);
  }
  return table.toRun(rolloutsPath, await readTaskIdentity(materializedInputsPathFor(rolloutsPath)));
}

/**
 * The prompt (`responses_create_params`) may differ between two runs on purpose — comparing prompts is what a
 * comparison is for — and the agent does; the rest of a dataset row says which task it is.
 */
const NOT_IDENTITY = new Set(['responses_create_params', 'agent_ref']);

function identityOf(row: Record<string, unknown>): string {
  const hash = createHash('sha256');
  for (const key of Object.keys(row).sort()) {
    if (NOT_IDENTITY.has(key) || key.startsWith('_ng_')) continue;
    hash.update(JSON.stringify([key, row[key]]));
  }
  return hash.digest('base64');
}

async function readTaskIdentity(inputsPath: string): Promise<Map<number, string>> {
  const identity = new Map<number, string>();
  if (!existsSync(inputsPath)) return identity;
  await scanRowsFile(inputsPath, (row) => {
    const task = row[NG.taskIndex];
    if (Number.isSafeInteger(task) && !identity.has(task as number)) identity.set(task as number, identityOf(row));
  });
  return identity;
}
