/**
 * What a local model server (llama.cpp's `llama-server`, issue #24) answers on `/v1/responses`, for tests: a valid
 * conversation step in every respect except that it echoes nothing of the request (no `tools`, `tool_choice`,
 * `parallel_tool_calls`) and reports usage without `output_tokens_details`, plus a `completed_at` of its own.
 * Tests script a service with these shapes to check the remote agent's and `gym agent check`'s opt-in (D24).
 */
import { counterTaskReply } from '../../src/testing/counter-brain.js';
import type { ServiceCall } from '../../src/testing/index.js';

type Body = Record<string, unknown>;

/** The usage `llama-server` reports: counts and the input details only. */
export const LOCAL_SERVER_USAGE = {
  input_tokens: 192,
  output_tokens: 64,
  total_tokens: 256,
  input_tokens_details: { cached_tokens: 0 },
};

/** A complete Responses object as `llama-server` shapes it: the echo fields dropped, the usage cut short. */
export function localServerShape(complete: Body): Body {
  const { tools: _tools, tool_choice: _choice, parallel_tool_calls: _parallel, usage: _usage, ...rest } = complete;
  return { completed_at: 1796155686, ...rest, created_at: 1796155686, model: 'tiny', usage: { ...LOCAL_SERVER_USAGE } };
}

/** The counter tasks solved (src/testing/counter-brain.ts), answered in `llama-server`'s shape. */
export function localCounterService(call: ServiceCall): Body {
  return localServerShape(counterTaskReply(call));
}
