import { request } from '../../src/http/client.js';
import {
  messageText,
  outputText,
  type ConversationItem,
  type Decide,
  type DecideContext,
  type Decision,
  type FunctionTool,
  type TokenUsage,
} from '../../src/service/index.js';

/**
 * Any OpenAI-compatible model server as an agent's brain (OpenAI, vLLM, SGLang, llama.cpp server, …).
 * Each call sends the conversation to the model once and translates its reply: tool calls become asks for Gym,
 * text becomes the final answer, and the model's own token counts become the response's usage.
 *
 * `api: 'chat'` (default) speaks /chat/completions, so the conversation is mapped to chat messages (assistant
 * `tool_calls` + `tool` role results) and back; `api: 'responses'` speaks /responses, where the conversation is
 * already in the right shape.
 */

export interface OpenAiBrainOptions {
  /**
   * The API base, e.g. https://api.openai.com/v1 or http://localhost:8000/v1. Optional when Gym hands each rollout a
   * model URL (a remote agent with `model_server`): that one wins, so every call is recorded on the rollout's row.
   */
  modelUrl?: string;
  /** The model name sent; a model server replaces it with its configured model. */
  model: string;
  /** Sent as `Authorization: Bearer …` when set (local servers usually need none). */
  apiKey?: string;
  api?: 'chat' | 'responses';
  /** Bound on one model call. Default 600 s. */
  timeoutMs?: number;
}

export function createOpenAiDecide(options: OpenAiBrainOptions): Decide {
  const configured = options.modelUrl?.replace(/\/+$/, '');
  const api = options.api ?? 'chat';
  const headers: Record<string, string> = options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {};
  const call = async (path: string, body: unknown, ctx: DecideContext): Promise<unknown> => {
    // The rollout's model URL from Gym first: the model server records the call against this rollout.
    const base = ctx.modelBaseUrl ?? configured;
    if (base === undefined) {
      throw new Error(
        'no model URL: start the service with --model-url, or run it behind a remote agent with model_server set',
      );
    }
    const res = await request(`${base}${path}`, {
      method: 'POST',
      json: body,
      // The service's own key is for its own model URL; a model server holds the upstream's key itself.
      headers: ctx.modelBaseUrl === undefined ? headers : {},
      timeoutMs: options.timeoutMs ?? 600_000,
      signal: ctx.signal,
    });
    if (res.status < 200 || res.status >= 300) {
      throw new Error(`the model server answered HTTP ${res.status} at ${base}${path}: ${excerpt(res.text())}`);
    }
    return res.json();
  };

  return async (conversation, tools, ctx) => {
    if (api === 'responses') {
      const reply = await call(
        '/responses',
        { model: options.model, input: toResponsesInput(conversation), tools },
        ctx,
      );
      return fromResponsesReply(reply as ResponsesReply);
    }
    const body: Record<string, unknown> = { model: options.model, messages: toChatMessages(conversation) };
    if (tools.length > 0) body.tools = toChatTools(tools);
    return fromChatReply((await call('/chat/completions', body, ctx)) as ChatReply);
  };
}

// ---------------------------------------------------------------------------------------------------
// Chat completions

export interface ChatToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export type ChatMessage =
  | { role: 'system' | 'user'; content: string }
  | { role: 'assistant'; content: string | null; tool_calls?: ChatToolCall[] }
  | { role: 'tool'; tool_call_id: string; content: string };

export function toChatTools(tools: readonly FunctionTool[]): unknown[] {
  return tools.map((tool) => ({
    type: 'function',
    function: {
      name: tool.name,
      ...(tool.description ? { description: tool.description } : {}),
      parameters: tool.parameters ?? { type: 'object', properties: {} },
    },
  }));
}

/**
 * Responses items → chat messages. Consecutive function calls join the assistant message before them (one chat
 * turn can say something and call tools); each result becomes a `tool` message. Reasoning items have no chat form.
 */
export function toChatMessages(conversation: readonly ConversationItem[]): ChatMessage[] {
  const messages: ChatMessage[] = [];
  for (const item of conversation) {
    if (item.type === undefined || item.type === 'message') {
      const role = item.role === 'assistant' ? 'assistant' : item.role === 'user' ? 'user' : 'system';
      messages.push({ role, content: messageText(item) });
    } else if (item.type === 'function_call') {
      const call: ChatToolCall = {
        id: String(item.call_id),
        type: 'function',
        function: { name: String(item.name), arguments: typeof item.arguments === 'string' ? item.arguments : '{}' },
      };
      const last = messages[messages.length - 1];
      if (last?.role === 'assistant') (last.tool_calls ??= []).push(call);
      else messages.push({ role: 'assistant', content: null, tool_calls: [call] });
    } else if (item.type === 'function_call_output') {
      messages.push({ role: 'tool', tool_call_id: String(item.call_id), content: outputText(item.output) });
    }
  }
  return messages;
}

/**
 * A /chat/completions reply as far as this brain reads it. Every field is optional and unchecked: the model server
 * is outside our control, so each read below tolerates a missing or wrong-typed value.
 */
export interface ChatReply {
  choices?: { message?: { content?: unknown; tool_calls?: unknown } }[];
  usage?: {
    prompt_tokens?: unknown;
    completion_tokens?: unknown;
    prompt_tokens_details?: { cached_tokens?: unknown };
    completion_tokens_details?: { reasoning_tokens?: unknown };
  };
}

export function fromChatReply(reply: ChatReply): Decision {
  const message = reply.choices?.[0]?.message;
  if (!message) throw new Error(`the model's reply has no choices[0].message: ${excerpt(JSON.stringify(reply))}`);
  const usage: TokenUsage = {
    inputTokens: count(reply.usage?.prompt_tokens),
    outputTokens: count(reply.usage?.completion_tokens),
    cachedTokens: count(reply.usage?.prompt_tokens_details?.cached_tokens),
    reasoningTokens: count(reply.usage?.completion_tokens_details?.reasoning_tokens),
  };
  const calls = Array.isArray(message.tool_calls) ? (message.tool_calls as ChatToolCall[]) : [];
  if (calls.length > 0) {
    // The model's argument text goes out verbatim: if it is malformed, Gym returns an error the model can read.
    return {
      toolCalls: calls.map((call) => ({ name: call.function.name, arguments: call.function.arguments || '{}' })),
      usage,
    };
  }
  return { final: typeof message.content === 'string' ? message.content : '', usage };
}

// ---------------------------------------------------------------------------------------------------
// Responses

/** Our items' ids were minted by this service, not by the model server, which would reject unknown ids. */
export function toResponsesInput(conversation: readonly ConversationItem[]): unknown[] {
  return conversation.map(({ id: _id, status: _status, ...rest }) => rest);
}

/** A /responses reply as far as this brain reads it; unchecked, like {@link ChatReply}. */
export interface ResponsesReply {
  output?: unknown;
  usage?: {
    input_tokens?: unknown;
    output_tokens?: unknown;
    input_tokens_details?: { cached_tokens?: unknown };
    output_tokens_details?: { reasoning_tokens?: unknown };
  };
}

export function fromResponsesReply(reply: ResponsesReply): Decision {
  const output: ConversationItem[] = Array.isArray(reply.output) ? (reply.output as ConversationItem[]) : [];
  const usage: TokenUsage = {
    inputTokens: count(reply.usage?.input_tokens),
    outputTokens: count(reply.usage?.output_tokens),
    cachedTokens: count(reply.usage?.input_tokens_details?.cached_tokens),
    reasoningTokens: count(reply.usage?.output_tokens_details?.reasoning_tokens),
  };
  const calls = output.filter((item) => item.type === 'function_call');
  if (calls.length > 0) {
    return {
      toolCalls: calls.map((call) => ({ name: String(call.name), arguments: String(call.arguments ?? '{}') })),
      usage,
    };
  }
  const text = output
    .filter((item) => item.type === 'message')
    .map((item) => messageText(item))
    .join('\n');
  return { final: text, usage };
}

function count(value: unknown): number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 ? value : 0;
}

function excerpt(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > 300 ? `${flat.slice(0, 300)}…` : flat;
}
