import { randomBytes } from 'node:crypto';
import { assistantTextMessage } from '../contract/messages.js';
import type { FunctionTool } from './conversation.js';
import type { CheckedDecision } from './decision.js';

/**
 * Turning a checked decision into the Responses object Gym expects, in the exact shapes of the contract
 * (docs/services.md; docs/design.md, "The Responses object"): unpaired `function_call` items for asks, paired call +
 * output records for tools the service ran itself, an assistant `message` to finish, and a complete `usage`.
 */

/** Ids are random, so they are unique within a rollout even when a client does not echo the kit's cookie. */
export function newId(prefix: string): string {
  return `${prefix}_${randomBytes(12).toString('hex')}`;
}

export interface ResponseContext {
  /** Reported as the response's `model`. */
  brainName: string;
  /** The request's declared function tools, echoed as the response's `tools`. */
  tools: readonly FunctionTool[];
  parallelToolCalls: boolean;
}

export function buildResponse(decision: CheckedDecision, ctx: ResponseContext): Record<string, unknown> {
  const output: Record<string, unknown>[] = [];
  for (const record of decision.internal) {
    const callId = newId('call');
    output.push(functionCallItem(record.name, record.arguments, callId));
    output.push({
      type: 'function_call_output',
      id: newId('fco'),
      call_id: callId,
      output: record.output,
      status: 'completed',
    });
  }
  if (decision.modelText !== undefined && decision.modelText !== decision.final) {
    output.push(assistantMessage(decision.modelText));
  }
  if (decision.toolCalls) {
    for (const call of decision.toolCalls) output.push(functionCallItem(call.name, call.arguments, newId('call')));
  } else {
    output.push(assistantMessage(decision.final ?? ''));
  }
  const { inputTokens, outputTokens, cachedTokens, reasoningTokens } = decision.usage;
  return {
    id: newId('resp'),
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    model: ctx.brainName,
    status: 'completed',
    error: null,
    incomplete_details: null,
    output,
    parallel_tool_calls: ctx.parallelToolCalls,
    tool_choice: 'auto',
    tools: ctx.tools,
    usage: {
      input_tokens: inputTokens,
      input_tokens_details: { cached_tokens: cachedTokens },
      output_tokens: outputTokens,
      output_tokens_details: { reasoning_tokens: reasoningTokens },
      total_tokens: inputTokens + outputTokens,
    },
  };
}

function functionCallItem(name: string, args: string, callId: string): Record<string, unknown> {
  return { type: 'function_call', id: newId('fc'), call_id: callId, name, arguments: args, status: 'completed' };
}

export function assistantMessage(text: string): Record<string, unknown> {
  return assistantTextMessage(text, newId('msg'));
}
