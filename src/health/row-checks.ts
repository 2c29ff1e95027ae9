/**
 * The checks that read one row alone (docs/artefacts.md, "Rollout health"): what a success row's `response` and
 * `reward` say about how the rollout ended, and whether a failure row records a timeout. Each answers the names of
 * the checks the row trips; the run-wide checks (duplicates, missing rollouts, degenerate repeats) are in ./health.ts.
 */
import { createHash } from 'node:crypto';
import { isAssistantMessage } from '../contract/messages.js';
import { isRecord } from '../contract/records.js';
import { NG } from '../runfiles/ng-keys.js';
import type { Row } from '../runfiles/row.js';

/** The checks a success row can trip, in the order they are reported. */
export type SuccessCheck =
  | 'rollout_incomplete'
  | 'rollout_max_steps'
  | 'rollout_unanswered_tool_call'
  | 'rollout_empty_final_answer'
  | 'rollout_reward_out_of_range'
  | 'rollout_usage_missing';

const USAGE_COUNTS = ['input_tokens', 'output_tokens', 'total_tokens'] as const;

function outputOf(response: unknown): readonly unknown[] {
  return isRecord(response) && Array.isArray(response.output) ? response.output : [];
}

/** The service said it stopped short (`incomplete_details`, e.g. max_output_tokens): the loop verified what it had. */
function endedIncomplete(response: unknown): boolean {
  if (!isRecord(response)) return false;
  return (
    (response.incomplete_details !== undefined && response.incomplete_details !== null) ||
    response.status === 'incomplete'
  );
}

/**
 * The loop stops right after running a step's tools only when `max_steps` is reached (src/rollout/rollout.ts): the
 * service never saw those outputs, so the trajectory ends on a `function_call_output`. The row has no other mark.
 */
function endedOnMaxSteps(output: readonly unknown[]): boolean {
  const last = output.at(-1);
  return isRecord(last) && last.type === 'function_call_output';
}

/** `function_call`s with no later `function_call_output` of the same `call_id`. */
function hasUnansweredCall(output: readonly unknown[]): boolean {
  const pending = new Set<string>();
  for (const item of output) {
    if (!isRecord(item) || typeof item.call_id !== 'string') continue;
    if (item.type === 'function_call') pending.add(item.call_id);
    else if (item.type === 'function_call_output') pending.delete(item.call_id);
  }
  return pending.size > 0;
}

function messageText(item: Record<string, unknown>): string {
  const content = item.content;
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  let text = '';
  for (const part of content) {
    if (!isRecord(part)) continue;
    // A refusal is an answer too: the model said something, it was not empty.
    if (typeof part.text === 'string') text += part.text;
    else if (typeof part.refusal === 'string') text += part.refusal;
  }
  return text;
}

/** The text of the assistant messages after the last tool item: the answer the rollout ended with. */
function finalAnswer(output: readonly unknown[]): string {
  let text = '';
  for (let i = output.length - 1; i >= 0; i--) {
    const item = output[i];
    if (isRecord(item) && (item.type === 'function_call' || item.type === 'function_call_output')) break;
    if (isRecord(item) && isAssistantMessage(item)) text = messageText(item) + text;
  }
  return text;
}

function rewardInRange(reward: unknown): boolean {
  return typeof reward === 'number' && Number.isFinite(reward) && reward >= 0 && reward <= 1;
}

function usageComplete(response: unknown): boolean {
  if (!isRecord(response) || !isRecord(response.usage)) return false;
  const usage = response.usage;
  return USAGE_COUNTS.every((key) => typeof usage[key] === 'number' && Number.isFinite(usage[key]));
}

/** The checks a row of `<stem>.jsonl` trips. */
export function successFindings(row: Row): SuccessCheck[] {
  const findings: SuccessCheck[] = [];
  const output = outputOf(row.response);
  const incomplete = endedIncomplete(row.response);
  const maxSteps = !incomplete && endedOnMaxSteps(output);
  if (incomplete) findings.push('rollout_incomplete');
  if (maxSteps) findings.push('rollout_max_steps');
  if (hasUnansweredCall(output)) findings.push('rollout_unanswered_tool_call');
  // A rollout cut short has no final answer by construction: that is said once, by the check that names the cause.
  if (!incomplete && !maxSteps && finalAnswer(output).trim() === '') findings.push('rollout_empty_final_answer');
  if (!rewardInRange(row.reward)) findings.push('rollout_reward_out_of_range');
  if (!usageComplete(row.response)) findings.push('rollout_usage_missing');
  return findings;
}

/**
 * A failure that a clock ended: its stable code (`_ng_failure_code`) names a timeout — the rollout's run_timeout_secs
 * (REMOTE_AGENT_RUN_TIMEOUT), one service call's bound (REMOTE_TIMEOUT) or any other `…_TIMEOUT`. The message is
 * never read; a row without a code (written before codes were recorded, or by another tool) counts as failed only.
 */
export function failureTimedOut(row: Row): boolean {
  const code = row[NG.failureCode];
  return typeof code === 'string' && /(^|_)TIMEOUT$/.test(code);
}

/**
 * A digest of what the rollout produced, for comparing repeats of a task: every output item without its `id` and
 * `call_id` (fresh per response even when the content is the same), in order. Identical digests across every repeat
 * mean the sampling produced one trajectory again and again.
 */
export function outputDigest(row: Row): string {
  const hash = createHash('sha256');
  for (const item of outputOf(row.response)) {
    if (isRecord(item)) {
      const { id: _id, call_id: _callId, ...content } = item;
      hash.update(JSON.stringify(content));
    } else hash.update(JSON.stringify(item) ?? 'undefined');
    hash.update('\n');
  }
  return hash.digest('base64');
}
