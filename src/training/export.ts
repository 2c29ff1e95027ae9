/**
 * A trainable row as a trainer reads it (`gym eval export --format trainer`): the delivered chain as one flat
 * sequence, read back from the token fields `rebuild.ts` put on the row's output items. Each token-bearing item's
 * `prompt_token_ids` is every token before its generation (contiguous, see `assertPrefixContiguity`), so the whole
 * sequence is the last such item's prompt plus its generation, and each generation sits at `[prompt.length,
 * prompt.length + generation.length)`. A row that cannot be read that way is skipped with a reason, never guessed at.
 */
import { isRecord } from '../contract/records.js';
import { NG } from '../runfiles/ng-keys.js';
import { MASK_SAMPLE_KEY, TOKEN_CAPTURE_KEY } from './rebuild.js';

/** One line of the trainer JSONL. */
export interface TrainerSample {
  task_index: number;
  rollout_index: number;
  /** GRPO's group: the rollouts of one task. */
  group_index: number;
  reward: number;
  input_ids: number[];
  /** 1 on generated tokens, 0 on the first prompt and interstitial tokens. */
  loss_mask: number[];
  /** The sampled token's log-prob where `loss_mask` is 1, else 0. */
  logprobs: number[];
  advantage?: number;
}

/** Why a row was not exported: the summary counts rows by these. */
export type SkipReason =
  | 'failed rollout'
  | 'mask_sample: true'
  | 'no token fields'
  | 'malformed token fields'
  | 'not prefix-contiguous'
  | 'no numeric reward'
  | `no ${typeof NG.taskIndex}`;

export type SampleResult = { sample: TrainerSample } | { skip: SkipReason; detail?: string };

interface TokenItem {
  prompt: number[];
  generation: number[];
  logProbs: number[];
}

const isIdList = (value: unknown): value is number[] =>
  Array.isArray(value) && value.every((id) => Number.isInteger(id) && (id as number) >= 0);
const isNumberList = (value: unknown): value is number[] =>
  Array.isArray(value) && value.every((n) => typeof n === 'number' && Number.isFinite(n));

/** The output items that carry token fields, in order; undefined when one of them is malformed. */
function tokenItems(row: Record<string, unknown>): TokenItem[] | undefined {
  const response = row.response;
  const output = isRecord(response) && Array.isArray(response.output) ? response.output : [];
  const items: TokenItem[] = [];
  for (const item of output) {
    if (!isRecord(item) || item.generation_token_ids === undefined) continue;
    const { prompt_token_ids: prompt, generation_token_ids: generation, generation_log_probs: logProbs } = item;
    if (!isIdList(prompt) || !isIdList(generation) || !isNumberList(logProbs)) return undefined;
    if (generation.length !== logProbs.length) return undefined;
    items.push({ prompt, generation, logProbs });
  }
  return items;
}

/** The flat sequence of contiguous items, or undefined when an item's prompt does not extend what came before. */
function flatSequence(
  items: readonly TokenItem[],
): Pick<TrainerSample, 'input_ids' | 'loss_mask' | 'logprobs'> | undefined {
  const last = items[items.length - 1]!;
  const input_ids = [...last.prompt, ...last.generation];
  const loss_mask = new Array<number>(input_ids.length).fill(0);
  const logprobs = new Array<number>(input_ids.length).fill(0);
  let seen = 0;
  for (const item of items) {
    if (item.prompt.length < seen || item.prompt.some((id, i) => input_ids[i] !== id)) return undefined;
    const start = item.prompt.length;
    if (item.generation.some((id, i) => input_ids[start + i] !== id)) return undefined;
    item.generation.forEach((_, i) => {
      loss_mask[start + i] = 1;
      logprobs[start + i] = item.logProbs[i]!;
    });
    seen = start + item.generation.length;
  }
  return { input_ids, loss_mask, logprobs };
}

/** A row of a rollouts file as a trainer sample, or why it is skipped. */
export function trainerSample(row: Record<string, unknown>): SampleResult {
  if (row[NG.failureClass] !== undefined) return { skip: 'failed rollout' };
  if (row[MASK_SAMPLE_KEY] === true) {
    const report = row[TOKEN_CAPTURE_KEY];
    const detail = isRecord(report) && typeof report.error === 'string' ? report.error : undefined;
    return detail === undefined ? { skip: 'mask_sample: true' } : { skip: 'mask_sample: true', detail };
  }
  const items = tokenItems(row);
  if (items === undefined) return { skip: 'malformed token fields' };
  if (items.length === 0) return { skip: 'no token fields' };
  const sequence = flatSequence(items);
  if (sequence === undefined) return { skip: 'not prefix-contiguous' };
  const reward = row.reward;
  if (typeof reward !== 'number' || !Number.isFinite(reward)) return { skip: 'no numeric reward' };
  const task = row[NG.taskIndex];
  if (!Number.isInteger(task)) return { skip: `no ${NG.taskIndex}` };
  const rollout = row[NG.rolloutIndex];
  return {
    sample: {
      task_index: task as number,
      rollout_index: Number.isInteger(rollout) ? (rollout as number) : 0,
      group_index: task as number,
      reward,
      ...sequence,
    },
  };
}

/** The epsilon in GRPO's denominator, so a group whose rewards are all equal gets advantage 0, not a division by 0. */
export const GRPO_EPSILON = 1e-6;

/** A group's reward statistics: the mean and the population standard deviation (divided by n, not n − 1). */
export interface GroupStats {
  mean: number;
  std: number;
}

/**
 * GRPO's group statistics from each exported sample's reward by group. The population deviation is used so a group
 * of one rollout is defined (std 0, advantage 0) rather than NaN.
 */
export function groupStats(rewardsByGroup: ReadonlyMap<number, readonly number[]>): Map<number, GroupStats> {
  const stats = new Map<number, GroupStats>();
  for (const [group, rewards] of rewardsByGroup) {
    const mean = rewards.reduce((sum, r) => sum + r, 0) / rewards.length;
    const variance = rewards.reduce((sum, r) => sum + (r - mean) ** 2, 0) / rewards.length;
    stats.set(group, { mean, std: Math.sqrt(variance) });
  }
  return stats;
}

/** (reward − group mean) ÷ (group std + 1e-6). */
export function grpoAdvantage(reward: number, stats: GroupStats): number {
  return (reward - stats.mean) / (stats.std + GRPO_EPSILON);
}
