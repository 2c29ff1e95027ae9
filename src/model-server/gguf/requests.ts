/**
 * What a call to `gguf_model` asks for, read from either dialect's body into one shape: the chat messages the model's
 * template renders, the tools it shows, and the sampling. Chat completions are taken as OpenAI defines them (with
 * vLLM's `top_k`, `min_p` and `return_token_ids`); a Responses call is turned into the same chat messages and tools
 * by the translation vllm_model uses (../responses-chat.ts). Anything the engine cannot honour is refused with a 400
 * naming the field, never ignored.
 */
import { randomInt } from 'node:crypto';
import { isRecord } from '../../contract/records.js';
import type { Dialect } from '../records.js';
import { chatTools, contentText, inputMessages } from '../responses-chat.js';
import { GenerationRefused, type Sampling } from './engine.js';

export interface GenerationRequest {
  dialect: Dialect;
  messages: Record<string, unknown>[];
  tools: unknown[] | undefined;
  sampling: Sampling;
  stream: boolean;
  /** Chat: `logprobs: true` (log-probs and ids per token on the answer). */
  logprobs: boolean;
  /** vLLM's `return_token_ids`: the prompt's and the generation's ids on the answer. */
  returnTokenIds: boolean;
  /** Chat streams: `stream_options.include_usage`. */
  includeUsage: boolean;
}

const MAX_TOP_LOGPROBS = 20;

function refuse(message: string): never {
  throw new GenerationRefused(message);
}

function numberIn(body: Record<string, unknown>, key: string, min: number, max: number, fallback: number): number {
  const value = body[key];
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max) {
    refuse(`${key} must be a number from ${min} to ${max}, got ${JSON.stringify(value)}`);
  }
  return value;
}

function positiveInteger(body: Record<string, unknown>, key: string): number | undefined {
  const value = body[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    refuse(`${key} must be an integer >= 1, got ${JSON.stringify(value)}`);
  }
  return value;
}

function sampling(
  body: Record<string, unknown>,
  maxTokens: number | undefined,
  topLogprobs: number,
  format: Sampling['format'],
): Sampling {
  const topK = body.top_k;
  if (topK !== undefined && topK !== null && (typeof topK !== 'number' || !Number.isSafeInteger(topK) || topK < -1)) {
    refuse(`top_k must be an integer (-1 or 0 for no limit), got ${JSON.stringify(topK)}`);
  }
  const seed = body.seed;
  if (seed !== undefined && seed !== null && (typeof seed !== 'number' || !Number.isSafeInteger(seed))) {
    refuse(`seed must be an integer, got ${JSON.stringify(seed)}`);
  }
  return {
    temperature: numberIn(body, 'temperature', 0, 2, 1),
    topP: numberIn(body, 'top_p', 0, 1, 1),
    topK: typeof topK === 'number' && topK > 0 ? topK : 0,
    minP: numberIn(body, 'min_p', 0, 1, 0),
    seed: typeof seed === 'number' ? seed : randomInt(2 ** 31),
    maxTokens,
    topLogprobs,
    format,
  };
}

function refuseStop(body: Record<string, unknown>): void {
  const stop = body.stop;
  if (stop === undefined || stop === null || (Array.isArray(stop) && stop.length === 0)) return;
  // A stop string cuts the text inside the tokens generated, and the ids would then say more than the text.
  refuse(
    'stop sequences are not applied by gguf_model (the text would no longer match the generated token ids): ' +
      "leave stop out; generation ends at the model's end-of-generation token or at max_tokens",
  );
}

function formatOf(format: unknown, where: string): Sampling['format'] {
  if (format === undefined || format === null) return undefined;
  if (!isRecord(format)) return refuse(`${where} must be an object`);
  if (format.type === 'text') return undefined;
  if (format.type === 'json_object') return 'json';
  if (format.type === 'json_schema') {
    // Chat nests the schema under json_schema; the Responses API's text.format carries it directly.
    const holder = isRecord(format.json_schema) ? format.json_schema : format;
    if (isRecord(holder.schema)) return holder.schema;
    return refuse(`${where} of type json_schema has no schema object`);
  }
  return refuse(`${where}.type must be text, json_object or json_schema, got ${JSON.stringify(format.type)}`);
}

export function chatRequest(body: Record<string, unknown>): GenerationRequest {
  if (!Array.isArray(body.messages) || body.messages.length === 0) refuse('messages must be a non-empty list');
  if (body.n !== undefined && body.n !== null && body.n !== 1) refuse(`n must be 1, got ${JSON.stringify(body.n)}`);
  refuseStop(body);
  const messages = body.messages.map((message, i) => {
    if (!isRecord(message) || typeof message.role !== 'string') refuse(`messages[${i}] must be an object with a role`);
    return { ...message, content: contentText(message.content, `messages[${i}]`) };
  });
  const top = body.top_logprobs;
  if (
    top !== undefined &&
    top !== null &&
    (typeof top !== 'number' || !Number.isSafeInteger(top) || top < 0 || top > MAX_TOP_LOGPROBS)
  ) {
    refuse(`top_logprobs must be an integer from 0 to ${MAX_TOP_LOGPROBS}, got ${JSON.stringify(top)}`);
  }
  const logprobs = body.logprobs === true;
  const maxTokens = positiveInteger(body, 'max_completion_tokens') ?? positiveInteger(body, 'max_tokens');
  const streamOptions = isRecord(body.stream_options) ? body.stream_options : {};
  return {
    dialect: 'chat',
    messages,
    tools: Array.isArray(body.tools) ? body.tools : undefined,
    sampling: sampling(
      body,
      maxTokens,
      logprobs && typeof top === 'number' ? top : 0,
      formatOf(body.response_format, 'response_format'),
    ),
    stream: body.stream === true,
    logprobs,
    returnTokenIds: body.return_token_ids === true,
    includeUsage: streamOptions.include_usage === true,
  };
}

export function responsesRequest(body: Record<string, unknown>): GenerationRequest {
  refuseStop(body);
  const text = isRecord(body.text) ? body.text : {};
  return {
    dialect: 'responses',
    messages: inputMessages(body.input, body.instructions),
    tools: chatTools(body.tools),
    sampling: sampling(body, positiveInteger(body, 'max_output_tokens'), 0, formatOf(text.format, 'text.format')),
    stream: body.stream === true,
    logprobs: false,
    returnTokenIds: false,
    includeUsage: false,
  };
}
