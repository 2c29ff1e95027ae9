/**
 * Token-id capture: how a model server asks its upstream for the exact token ids of a call and reads them back
 * (`prompt_token_ids`, `generation_token_ids`, `generation_log_probs`, the reference's field names). Two upstream
 * shapes give them, both over chat completions:
 *
 * - **vLLM** (`vllm_model` with `return_token_id_information: true`): the call asks for `logprobs: true,
 *   top_logprobs: 0` (the chosen token's log-prob only), `return_tokens_as_token_ids: true` (each
 *   `logprobs.content[i].token` reads `token_id:<n>`) and `return_token_ids: true` (the answer's top-level
 *   `prompt_token_ids` and `choices[0].token_ids`). Where both name the generated ids they must agree; a vLLM too old
 *   for `return_token_ids` gets its prompt ids from `POST /tokenize {model, messages}`.
 * - **llama-server** (`openai_model` in front of llama.cpp): `logprobs.content[i] = {id, token, logprob, …}` gives the
 *   generated ids; the prompt's come from `POST /apply-template {messages}` → `{prompt}` then
 *   `POST /tokenize {content, add_special: true, parse_special: true}` → `{tokens}`. llama-server refuses log-probs on
 *   a streamed call with tools, so such a call is refused here first, with the reason.
 *
 * - **gguf_model** (the in-process GGUF model): answers as llama-server does, with vLLM's top-level `prompt_token_ids`
 *   and `choices[0].token_ids` besides (`return_token_ids`), so nothing is asked twice.
 *
 * Anything else (OpenAI's own API gives log-probs without ids; a Responses-API call carries no log-probs at all)
 * cannot be captured, and the call fails with `TokenIdCaptureUnsupported`, naming the setting: a row must never look
 * trainable without its ids.
 */
import { isRecord } from '../contract/records.js';
import type { Dialect } from './records.js';

export interface CapturedTokens {
  prompt_token_ids: number[];
  generation_token_ids: number[];
  generation_log_probs: number[];
}

/** This call cannot be captured: the upstream or the call's shape gives no token ids. */
export class TokenIdCaptureUnsupported extends Error {}

/** The upstream answered ids that cannot be trusted (missing, not integers, disagreeing, wrong lengths). */
export class TokenIdsMalformed extends Error {}

/** A POST to the upstream server's root (not `/v1`), its JSON answer parsed and bounded; throws on a non-2xx. */
export type RootPost = (path: string, body: Record<string, unknown>, signal: AbortSignal) => Promise<unknown>;

export type TokenIdShape = 'vllm' | 'llama_server' | 'gguf';

const SETTING = 'token_id_capture';

/** What a captured call needs from its upstream, per shape. */
export class TokenIdSource {
  constructor(
    readonly shape: TokenIdShape,
    private readonly post: RootPost,
  ) {}

  /** The body the upstream gets for a captured call; throws `TokenIdCaptureUnsupported` for a call it cannot capture. */
  askFor(body: Record<string, unknown>, dialect: Dialect): Record<string, unknown> {
    if (dialect !== 'chat') {
      throw new TokenIdCaptureUnsupported(
        `${SETTING} is on, and a /v1/responses call carries no token ids from this upstream: call ` +
          '<model base URL>/chat/completions instead, or put vllm_model (without is_responses_native) in front of vLLM, ' +
          'which sends it as a chat completion (the Responses API answer has no log-probs to read them from)',
      );
    }
    if (body.n !== undefined && body.n !== null && body.n !== 1) {
      throw new TokenIdCaptureUnsupported(
        `${SETTING} is on, which needs n=1 (one choice per call), got n=${JSON.stringify(body.n)}`,
      );
    }
    if (this.shape === 'llama_server' && body.stream === true && Array.isArray(body.tools) && body.tools.length > 0) {
      throw new TokenIdCaptureUnsupported(
        `${SETTING} is on, and llama-server gives no log-probs on a streamed call with tools: call it with ` +
          'stream: false',
      );
    }
    const asked: Record<string, unknown> = { ...body, logprobs: true, top_logprobs: 0 };
    if (this.shape === 'vllm') asked.return_tokens_as_token_ids = true;
    if (this.shape !== 'llama_server') asked.return_token_ids = true;
    return asked;
  }

  /** The ids of a whole answer (or of a stream's gathered pieces). */
  async read(answer: AnswerTokens, sent: Record<string, unknown>, signal: AbortSignal): Promise<CapturedTokens> {
    const generation = this.shape === 'vllm' ? vllmGeneration(answer) : llamaGeneration(answer);
    const prompt = answer.promptTokenIds ?? (await this.promptIds(sent, signal));
    return { prompt_token_ids: prompt, ...generation };
  }

  private async promptIds(sent: Record<string, unknown>, signal: AbortSignal): Promise<number[]> {
    if (this.shape === 'vllm') {
      const answer = await this.post('/tokenize', { model: sent.model, messages: sent.messages }, signal);
      return tokenList(isRecord(answer) ? answer.tokens : undefined, 'tokenize.tokens');
    }
    const templated = await this.post('/apply-template', { messages: sent.messages }, signal);
    const prompt = isRecord(templated) ? templated.prompt : undefined;
    if (typeof prompt !== 'string') throw new TokenIdsMalformed('apply-template answered no prompt text');
    const answer = await this.post('/tokenize', { content: prompt, add_special: true, parse_special: true }, signal);
    return tokenList(isRecord(answer) ? answer.tokens : undefined, 'tokenize.tokens');
  }
}

/** The token-bearing parts of one answer, gathered from a whole chat answer or from the chunks of a stream. */
export interface AnswerTokens {
  /** The top-level `prompt_token_ids` (vLLM with return_token_ids), or undefined. */
  promptTokenIds: number[] | undefined;
  /** `choices[0].token_ids`, or undefined. */
  choiceTokenIds: number[] | undefined;
  /** `choices[0].logprobs.content`, concatenated over chunks; undefined when the answer had none. */
  logprobContent: unknown[] | undefined;
}

/** The token-bearing parts of a whole chat answer; malformed parts throw `TokenIdsMalformed`. */
export function answerTokens(answer: Record<string, unknown>): AnswerTokens {
  const choice = firstChoice(answer);
  if (Array.isArray(answer.choices) && answer.choices.length > 1) {
    throw new TokenIdsMalformed(`the answer has ${answer.choices.length} choices; capture needs exactly one`);
  }
  const logprobs = choice?.logprobs;
  return {
    promptTokenIds: optionalTokenList(answer.prompt_token_ids, 'prompt_token_ids'),
    choiceTokenIds: optionalTokenList(choice?.token_ids, 'choices[0].token_ids'),
    logprobContent: isRecord(logprobs) && Array.isArray(logprobs.content) ? logprobs.content : undefined,
  };
}

function firstChoice(answer: Record<string, unknown>): Record<string, unknown> | undefined {
  return Array.isArray(answer.choices) && isRecord(answer.choices[0]) ? answer.choices[0] : undefined;
}

/**
 * The generated ids and log-probs of `logprobs.content`, each entry's id read by `idOf` (the two shapes name it
 * differently); where the answer also lists `choices[0].token_ids`, the two must agree.
 */
function generationOf(
  answer: AnswerTokens,
  asked: string,
  idOf: (entry: unknown, i: number) => number,
): Omit<CapturedTokens, 'prompt_token_ids'> {
  const content = requireLogprobs(answer, asked);
  const ids: number[] = [];
  const logProbs: number[] = [];
  content.forEach((entry, i) => {
    ids.push(idOf(entry, i));
    logProbs.push(logProb(isRecord(entry) ? entry.logprob : undefined, i));
  });
  if (answer.choiceTokenIds !== undefined && !sameIds(answer.choiceTokenIds, ids)) {
    throw new TokenIdsMalformed('choices[0].token_ids disagrees with the ids of logprobs.content');
  }
  return { generation_token_ids: ids, generation_log_probs: logProbs };
}

/** vLLM with `return_tokens_as_token_ids`: each entry's `token` reads `token_id:<n>`. */
function vllmGeneration(answer: AnswerTokens): Omit<CapturedTokens, 'prompt_token_ids'> {
  return generationOf(answer, 'return_token_id_information (logprobs, return_tokens_as_token_ids)', (entry, i) => {
    const token = isRecord(entry) ? entry.token : undefined;
    const match = typeof token === 'string' ? /^token_id:(\d+)$/.exec(token) : null;
    if (!match) {
      throw new TokenIdsMalformed(
        `logprobs.content[${i}].token is not 'token_id:<n>' (is return_tokens_as_token_ids honoured by this vLLM?)`,
      );
    }
    return tokenId(Number(match[1]), `logprobs.content[${i}].token`);
  });
}

/** llama-server (and gguf_model): each entry's `id`. */
function llamaGeneration(answer: AnswerTokens): Omit<CapturedTokens, 'prompt_token_ids'> {
  return generationOf(answer, 'logprobs', (entry, i) => {
    const id = isRecord(entry) ? entry.id : undefined;
    if (id === undefined) {
      throw new TokenIdCaptureUnsupported(
        `${SETTING} is on, and this upstream answers log-probs without token ids (logprobs.content[${i}] has no ` +
          "'id'; OpenAI's API never gives them): use vllm_model with return_token_id_information: true in front of " +
          'vLLM, or openai_model in front of llama-server',
      );
    }
    return tokenId(id, `logprobs.content[${i}].id`);
  });
}

function requireLogprobs(answer: AnswerTokens, asked: string): unknown[] {
  if (answer.logprobContent !== undefined) return answer.logprobContent;
  // An answer with no generated token at all has nothing to carry; anything else lost what was asked for.
  if (answer.choiceTokenIds !== undefined && answer.choiceTokenIds.length === 0) return [];
  throw new TokenIdCaptureUnsupported(
    `${SETTING} is on, and the upstream's answer carries no logprobs.content although the call asked for ${asked}: ` +
      'this upstream cannot give token ids',
  );
}

function sameIds(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((id, i) => id === b[i]);
}

function tokenId(value: unknown, where: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new TokenIdsMalformed(`${where} is not a token id (an integer >= 0)`);
  }
  return value;
}

function logProb(value: unknown, i: number): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new TokenIdsMalformed(`logprobs.content[${i}].logprob is not a finite number`);
  }
  return value;
}

function optionalTokenList(value: unknown, where: string): number[] | undefined {
  return value === undefined || value === null ? undefined : tokenList(value, where);
}

function tokenList(value: unknown, where: string): number[] {
  if (!Array.isArray(value)) throw new TokenIdsMalformed(`${where} is not a list of token ids`);
  return value.map((id, i) => tokenId(id, `${where}[${i}]`));
}

/**
 * A chat answer's message as Responses output items, the way the row's output shows what a model produced: its text
 * as one assistant message, each tool call as a `function_call`. No token arrays.
 */
export function chatOutputItems(answer: Record<string, unknown>): Record<string, unknown>[] {
  const message = firstChoice(answer)?.message;
  if (!isRecord(message)) return [];
  return messageItems(message.content, Array.isArray(message.tool_calls) ? message.tool_calls : []);
}

export function messageItems(content: unknown, toolCalls: readonly unknown[]): Record<string, unknown>[] {
  const items: Record<string, unknown>[] = [];
  if (typeof content === 'string' && content !== '') {
    items.push({ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: content }] });
  }
  for (const call of toolCalls) {
    if (!isRecord(call) || !isRecord(call.function)) continue;
    items.push({
      type: 'function_call',
      call_id: typeof call.id === 'string' ? call.id : '',
      name: typeof call.function.name === 'string' ? call.function.name : '',
      arguments: typeof call.function.arguments === 'string' ? call.function.arguments : '',
    });
  }
  return items;
}

/**
 * The token-bearing parts and the message of a streamed chat answer, gathered chunk by chunk (vLLM sends
 * `prompt_token_ids` on its first chunk and each chunk's `token_ids`; both send `logprobs.content` per chunk).
 * Bounded by the relay's own limits: it holds one number per token and the message text.
 */
export class ChatStreamTokens {
  private prompt: number[] | undefined;
  private choiceIds: number[] | undefined;
  private logprobs: unknown[] | undefined;
  private text = '';
  private readonly toolCalls: { id: string; name: string; arguments: string }[] = [];

  onChunk(chunk: Record<string, unknown>): void {
    if (this.prompt === undefined) this.prompt = optionalTokenList(chunk.prompt_token_ids, 'prompt_token_ids');
    const choice = firstChoice(chunk);
    if (!choice) return;
    const ids = optionalTokenList(choice.token_ids, 'choices[0].token_ids');
    if (ids) (this.choiceIds ??= []).push(...ids);
    const logprobs = choice.logprobs;
    if (isRecord(logprobs) && Array.isArray(logprobs.content))
      (this.logprobs ??= []).push(...(logprobs.content as unknown[]));
    const delta = isRecord(choice.delta) ? choice.delta : {};
    if (typeof delta.content === 'string') this.text += delta.content;
    if (Array.isArray(delta.tool_calls)) for (const call of delta.tool_calls) this.toolCallDelta(call);
  }

  private toolCallDelta(call: unknown): void {
    if (!isRecord(call)) return;
    const index = typeof call.index === 'number' && Number.isSafeInteger(call.index) ? call.index : 0;
    if (index < 0 || index > 1024) return;
    while (this.toolCalls.length <= index) this.toolCalls.push({ id: '', name: '', arguments: '' });
    const slot = this.toolCalls[index]!;
    if (typeof call.id === 'string') slot.id = call.id;
    const fn = isRecord(call.function) ? call.function : {};
    if (typeof fn.name === 'string') slot.name += fn.name;
    if (typeof fn.arguments === 'string') slot.arguments += fn.arguments;
  }

  tokens(): AnswerTokens {
    return { promptTokenIds: this.prompt, choiceTokenIds: this.choiceIds, logprobContent: this.logprobs };
  }

  outputItems(): Record<string, unknown>[] {
    return messageItems(
      this.text,
      this.toolCalls.map((c) => ({ id: c.id, function: { name: c.name, arguments: c.arguments } })),
    );
  }
}
