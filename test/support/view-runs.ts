/** Rows shaped like the collector's output, for the viewer's tests. */
import { appendFileSync } from 'node:fs';
import path from 'node:path';
import type { Row } from '../../src/runfiles/row.js';
import { tempDir, writeJsonl } from './cli.js';

function params(text: string): Row {
  return {
    input: [{ role: 'user', content: text }],
    tools: [{ type: 'function', name: 'lookup', parameters: { type: 'object', properties: {} } }],
  };
}

export function success(task: number, rollout: number, reward: number, output: unknown[], input = `task ${task}`): Row {
  return {
    responses_create_params: params(input),
    response: {
      id: `resp_${task}_${rollout}`,
      object: 'response',
      model: 'test-model',
      status: 'completed',
      output,
      usage: { input_tokens: 11, output_tokens: 7, total_tokens: 18, output_tokens_details: { reasoning_tokens: 3 } },
    },
    reward,
    _ng_task_index: task,
    _ng_rollout_index: rollout,
    agent_ref: { name: 'remote_agent' },
  };
}

export function failure(task: number, rollout: number, error: string, terminal: boolean, partial?: unknown[]): Row {
  return {
    responses_create_params: params(`task ${task}`),
    response: {
      id: 'remote_agent_failure',
      object: 'response',
      output: [{ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: '' }] }],
    },
    reward: 0,
    error,
    _ng_failure_class: 'remote_agent_error',
    ...(terminal ? { _ng_failure_terminal: true } : {}),
    ...(partial
      ? {
          _ng_partial_response: {
            id: 'partial',
            object: 'response',
            output: partial,
            usage: { input_tokens: 2, output_tokens: 1, total_tokens: 3 },
          },
          _ng_step_latency_secs: [0.25],
        }
      : {}),
    _ng_task_index: task,
    _ng_rollout_index: rollout,
    _ng_attempt_index: 1,
    agent_ref: { name: 'remote_agent' },
  };
}

/** The trajectory with every item kind, in this order: reasoning, call, output, assistant message, an unknown item. */
export const FULL_TRAJECTORY = [
  { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'Thinking about the capital' }] },
  { type: 'function_call', call_id: 'call_1', name: 'lookup', arguments: '{"city":"Paris","days":2}' },
  { type: 'function_call_output', call_id: 'call_1', output: '{"temperature":21}' },
  { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'It is 21 degrees.' }] },
  { type: 'web_search_call', id: 'ws_1', status: 'completed', query: 'weather paris' },
];

export const HOSTILE = '<script>alert(1)</script>';

/**
 * A run with 3 successes (rewards 0, 0.5, 1) and 2 failures (one retryable with a partial trajectory, one terminal
 * without). The files list rows out of (task, rollout) order on purpose.
 */
export function writeRun(options: { failures?: boolean } = {}): { dir: string; rollouts: string; failures: string } {
  const dir = tempDir('tsgym-view-');
  const rollouts = path.join(dir, 'rollouts.jsonl');
  const failures = path.join(dir, 'rollouts_failures.jsonl');
  writeJsonl(rollouts, [
    success(1, 0, 1, FULL_TRAJECTORY),
    success(
      0,
      1,
      0.5,
      [
        {
          type: 'function_call',
          call_id: 'call_x',
          name: 'lookup',
          arguments: `{"q":"${HOSTILE.replace(/"/g, '\\"')}"}`,
        },
        { type: 'function_call_output', call_id: 'call_x', output: `found ${HOSTILE}` },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: `answer ${HOSTILE}` }] },
      ],
      `please ${HOSTILE}`,
    ),
    success(0, 0, 0, [{ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'no idea' }] }]),
  ]);
  if (options.failures !== false) {
    writeJsonl(failures, [
      failure(2, 1, 'service broke the contract: step 2 returned no output', true),
      failure(2, 0, `transport error <b>${HOSTILE}</b>`, false, [
        { type: 'function_call', call_id: 'call_p', name: 'lookup', arguments: '{}' },
      ]),
    ]);
  }
  return { dir, rollouts, failures };
}

export function appendRaw(file: string, text: string): void {
  appendFileSync(file, text);
}
