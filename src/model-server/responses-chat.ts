/**
 * The Responses API in terms of chat completions, as NeMo Gym's `vllm_model` speaks to vLLM (its
 * `responses_converter.py`): a `/v1/responses` request becomes a chat request (`instructions` as the system message,
 * `function_call` items as assistant tool calls, `function_call_output` items as tool messages, function tools as chat
 * tools, `max_output_tokens` as `max_tokens`, `text.format` as `response_format`), and the chat answer becomes a
 * Responses object (reasoning, message and `function_call` output items, the usage renamed, `length` as
 * `incomplete`), with the request's settings echoed as the reference echoes them. `gguf_model` reads a Responses call
 * through the same functions. A streamed chat answer becomes the Responses events (`ChatToResponsesEvents`).
 *
 * Anything that has no chat equivalent is refused (`ResponsesRequestRefused`, a 400 naming the field), never dropped.
 */
import { randomUUID } from 'node:crypto';
import { isRecord } from '../contract/records.js';

/** The request cannot be read as a chat request; the message names the field. */
export class ResponsesRequestRefused extends Error {}

function refuse(message: string): never {
  throw new ResponsesRequestRefused(message);
}

function hexId(): string {
  return randomUUID().replaceAll('-', '');
}

/** Text of a message's content: a string, or the text of its parts (`text`, `input_text`, `output_text`). */
export function contentText(content: unknown, where: string): string {
  if (typeof content === 'string') return content;
  if (content === undefined || content === null) return '';
  if (!Array.isArray(content)) refuse(`${where}.content must be a string or a list of text parts`);
  return content
    .map((part, i) => {
      if (isRecord(part) && typeof part.text === 'string') return part.text;
      return refuse(`${where}.content[${i}] is not a text part (only text is translated to chat)`);
    })
    .join('');
}

/** A Responses call's `instructions` and `input` items as chat messages. */
export function inputMessages(input: unknown, instructions: unknown): Record<string, unknown>[] {
  const messages: Record<string, unknown>[] = [];
  if (typeof instructions === 'string' && instructions !== '') messages.push({ role: 'system', content: instructions });
  if (typeof input === 'string') return [...messages, { role: 'user', content: input }];
  if (!Array.isArray(input)) refuse('input must be a string or a list of items');
  input.forEach((item, i) => {
    const where = `input[${i}]`;
    if (!isRecord(item)) refuse(`${where} must be an object`);
    const type = item.type ?? 'message';
    if (type === 'message') {
      if (typeof item.role !== 'string') refuse(`${where}.role must be a string`);
      messages.push({ role: item.role, content: contentText(item.content, where) });
    } else if (type === 'function_call') {
      const call = { id: item.call_id, type: 'function', function: { name: item.name, arguments: item.arguments } };
      const last = messages[messages.length - 1];
      // Parallel calls of one turn are one assistant message with several tool calls.
      if (last?.role === 'assistant' && Array.isArray(last.tool_calls) && last.content === '') {
        (last.tool_calls as unknown[]).push(call);
      } else messages.push({ role: 'assistant', content: '', tool_calls: [call] });
    } else if (type === 'function_call_output') {
      messages.push({ role: 'tool', tool_call_id: item.call_id, content: contentText(item.output, `${where}.output`) });
    } else if (type !== 'reasoning') {
      refuse(
        `${where}.type ${JSON.stringify(type)} has no chat completions form (message, function_call, ` +
          'function_call_output, reasoning are translated)',
      );
    }
  });
  if (messages.length === 0) refuse('input has no items');
  return messages;
}

/** Responses function tools (`{type, name, description, parameters}`) as chat tools; other tool types are refused. */
export function chatTools(tools: unknown): Record<string, unknown>[] | undefined {
  if (tools === undefined || tools === null) return undefined;
  if (!Array.isArray(tools)) refuse('tools must be a list');
  return tools.map((tool, i) => {
    if (!isRecord(tool) || tool.type !== 'function') {
      refuse(`tools[${i}] is not a function tool: only function tools have a chat completions form`);
    }
    const { type: _type, strict: _strict, ...fn } = tool;
    return { type: 'function', function: fn };
  });
}

/** Responses `tool_choice` (`auto`, `none`, `required`, `{type: function, name}`) in chat's shape. */
function chatToolChoice(choice: unknown): unknown {
  if (isRecord(choice) && choice.type === 'function' && typeof choice.name === 'string') {
    return { type: 'function', function: { name: choice.name } };
  }
  return choice;
}

/** Responses `text.format` as chat's `response_format` (a json_schema's schema moves under `json_schema`). */
function responseFormat(format: unknown): unknown {
  if (!isRecord(format) || format.type !== 'json_schema') return format;
  const { type, ...schema } = format;
  return { type, json_schema: schema };
}

/** Sampling keys vLLM's chat endpoint reads under the same name as a Responses body may carry them. */
const SAME_NAME_KEYS = ['temperature', 'top_p', 'seed', 'top_k', 'min_p', 'repetition_penalty', 'user', 'metadata'];

/** The chat completions request for a `/v1/responses` body (the reference's `responses_to_chat_completion_create_params`). */
export function responsesToChatRequest(body: Record<string, unknown>): Record<string, unknown> {
  const chat: Record<string, unknown> = { messages: inputMessages(body.input, body.instructions) };
  if (typeof body.model === 'string') chat.model = body.model;
  for (const key of SAME_NAME_KEYS) if (body[key] !== undefined && body[key] !== null) chat[key] = body[key];
  if (body.max_output_tokens !== undefined && body.max_output_tokens !== null) {
    chat.max_tokens = body.max_output_tokens;
  }
  const reasoning = isRecord(body.reasoning) ? body.reasoning : undefined;
  if (reasoning?.effort !== undefined && reasoning.effort !== null) chat.reasoning_effort = reasoning.effort;
  const tools = chatTools(body.tools);
  if (tools && tools.length > 0) {
    chat.tools = tools;
    if (body.tool_choice !== undefined && body.tool_choice !== null)
      chat.tool_choice = chatToolChoice(body.tool_choice);
    if (typeof body.parallel_tool_calls === 'boolean') chat.parallel_tool_calls = body.parallel_tool_calls;
  } else if (body.tool_choice === 'required') {
    refuse("tool_choice 'required' needs at least one tool in tools");
  }
  const text = isRecord(body.text) ? body.text : undefined;
  if (text?.format !== undefined && text.format !== null) chat.response_format = responseFormat(text.format);
  if (body.stream === true) {
    chat.stream = true;
    // The Responses stream ends with the usage, so the chat stream must carry it.
    chat.stream_options = { include_usage: true };
  }
  return chat;
}

/** Chat usage (`prompt_tokens`, …) as Responses usage; null when the answer gave none. */
export function responsesUsage(usage: unknown): Record<string, unknown> | null {
  if (!isRecord(usage)) return null;
  const detail = (group: string, key: string): unknown => {
    const details = usage[group];
    return isRecord(details) && typeof details[key] === 'number' ? details[key] : 0;
  };
  const input = typeof usage.prompt_tokens === 'number' ? usage.prompt_tokens : 0;
  const output = typeof usage.completion_tokens === 'number' ? usage.completion_tokens : 0;
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: detail('prompt_tokens_details', 'cached_tokens') },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: detail('completion_tokens_details', 'reasoning_tokens') },
    total_tokens: typeof usage.total_tokens === 'number' ? usage.total_tokens : input + output,
  };
}

export function reasoningItem(text: string, status = 'completed'): Record<string, unknown> {
  return { id: `rs_${hexId()}`, type: 'reasoning', summary: [{ type: 'summary_text', text }], status };
}

export function messageItem(text: string, status = 'completed', id = `msg_${hexId()}`): Record<string, unknown> {
  return { id, type: 'message', role: 'assistant', status, content: [{ type: 'output_text', text, annotations: [] }] };
}

export function functionCallItem(
  callId: string,
  name: string,
  args: string,
  status = 'completed',
): Record<string, unknown> {
  return { id: callId, type: 'function_call', call_id: callId, name, arguments: args, status };
}

/** The reasoning text of a chat message or delta: vLLM's `reasoning_content`, or the newer `reasoning`. */
export function reasoningText(message: Record<string, unknown>): string {
  if (typeof message.reasoning_content === 'string') return message.reasoning_content;
  return typeof message.reasoning === 'string' ? message.reasoning : '';
}

/** A chat answer's message as output items: reasoning, then the text (an empty message when nothing else), then tool calls. */
export function messageOutputItems(message: Record<string, unknown>): Record<string, unknown>[] {
  const items: Record<string, unknown>[] = [];
  const reasoning = reasoningText(message);
  if (reasoning !== '') items.push(reasoningItem(reasoning));
  const toolCalls = Array.isArray(message.tool_calls) ? message.tool_calls.filter(isRecord) : [];
  const content = typeof message.content === 'string' ? message.content : '';
  if (content !== '' || (items.length === 0 && toolCalls.length === 0)) items.push(messageItem(content));
  for (const call of toolCalls) {
    const fn = isRecord(call.function) ? call.function : {};
    items.push(
      functionCallItem(
        typeof call.id === 'string' ? call.id : `call_${hexId()}`,
        typeof fn.name === 'string' ? fn.name : '',
        typeof fn.arguments === 'string' ? fn.arguments : '',
      ),
    );
  }
  return items;
}

/** Request settings the reference's `chat_completion_to_response` echoes onto the response, null when unset. */
const ECHOED_KEYS = [
  'temperature',
  'top_p',
  'background',
  'max_output_tokens',
  'max_tool_calls',
  'previous_response_id',
  'prompt',
  'reasoning',
  'service_tier',
  'text',
  'top_logprobs',
  'truncation',
  'metadata',
  'instructions',
  'user',
];

export interface ResponseParts {
  id: string;
  createdAt: number;
  model: string;
  output: Record<string, unknown>[];
  finishReason: string | null;
  usage: unknown;
  status?: string;
}

/** The Responses object around output items, with the request's settings echoed. */
export function responseObject(request: Record<string, unknown>, parts: ResponseParts): Record<string, unknown> {
  const incomplete =
    parts.finishReason === 'length'
      ? { reason: 'max_output_tokens' }
      : parts.finishReason === 'content_filter'
        ? { reason: 'content_filter' }
        : null;
  const echoed = Object.fromEntries(ECHOED_KEYS.map((key) => [key, request[key] ?? null]));
  return {
    id: parts.id,
    object: 'response',
    created_at: parts.createdAt,
    model: parts.model,
    output: parts.output,
    ...echoed,
    tool_choice: request.tool_choice ?? 'auto',
    parallel_tool_calls: typeof request.parallel_tool_calls === 'boolean' ? request.parallel_tool_calls : true,
    tools: Array.isArray(request.tools) ? request.tools : [],
    status: parts.status ?? (incomplete ? 'incomplete' : 'completed'),
    incomplete_details: incomplete,
    error: null,
    usage: responsesUsage(parts.usage),
  };
}

export function newResponseId(): string {
  return `resp_${hexId()}`;
}

/** A whole chat answer as the Responses object answering `request` (the reference's `chat_completion_to_response`). */
export function chatAnswerToResponse(
  answer: Record<string, unknown>,
  request: Record<string, unknown>,
  model: string,
): Record<string, unknown> {
  const choice = Array.isArray(answer.choices) && isRecord(answer.choices[0]) ? answer.choices[0] : {};
  const message = isRecord(choice.message) ? choice.message : {};
  return responseObject(request, {
    id: newResponseId(),
    createdAt: typeof answer.created === 'number' ? answer.created : Math.floor(Date.now() / 1000),
    model,
    output: messageOutputItems(message),
    finishReason: typeof choice.finish_reason === 'string' ? choice.finish_reason : null,
    usage: answer.usage,
  });
}
