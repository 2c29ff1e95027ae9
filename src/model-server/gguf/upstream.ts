/**
 * `gguf_model`'s upstream: the model server's `Upstream` answered in-process by a GGUF model (./engine.ts) instead of
 * over HTTP. Its answers have the shapes an OpenAI-compatible server gives, so the model server records, relays and
 * captures them as it does any upstream's: a chat completion (with `logprobs.content[i] = {id, token, logprob}` when
 * asked, and vLLM's top-level `prompt_token_ids` and `choices[0].token_ids` with `return_token_ids`), a Responses
 * object, or their server-sent events, generated token by token as the agent reads them.
 *
 * Tool calls are not parsed out of the text: the tools go to the model's chat template (the model sees them) and the
 * text comes back as the model wrote it, so the ids always decode to exactly the text the agent receives. An agent
 * that needs structured output asks for it with `response_format` (a grammar then constrains the sampling).
 */
import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { Readable } from 'node:stream';
import { parseBoundedJson } from '../../bounded-json/index.js';
import { isRecord } from '../../contract/records.js';
import { HttpTransportError, type HttpResponse } from '../../http/client.js';
import type { StreamingResponse } from '../../http/stream-client.js';
import { ResponsesRequestRefused } from '../responses-chat.js';
import { TokenIdSource, TokenIdsMalformed } from '../token-ids.js';
import type { Upstream, UpstreamCall } from '../upstream.js';
import { GenerationRefused, type FinishReason, type GeneratedToken, type GgufEngine } from './engine.js';
import { chatRequest, responsesRequest, type GenerationRequest } from './requests.js';

export interface GgufUpstreamOptions {
  /** The name answers carry as `model`. */
  model: string;
  extraBody: Record<string, unknown>;
  /** One call, its last token included (`request_timeout_secs`). */
  timeoutMs: number;
}

const JSON_HEADERS: IncomingHttpHeaders = { 'content-type': 'application/json' };
const SSE_HEADERS: IncomingHttpHeaders = { 'content-type': 'text/event-stream' };

export class GgufUpstream implements Upstream {
  readonly tokenIds = new TokenIdSource('gguf', () =>
    Promise.reject(new TokenIdsMalformed('gguf_model answers every captured call with its prompt ids')),
  );

  constructor(
    private readonly engine: GgufEngine,
    private readonly options: GgufUpstreamOptions,
  ) {}

  get model(): string {
    return this.options.model;
  }

  get extraBody(): Record<string, unknown> {
    return this.options.extraBody;
  }

  redact(text: string): string {
    return text; // it holds no secret
  }

  async send(call: UpstreamCall): Promise<HttpResponse> {
    const started = this.start(call);
    if ('refused' in started) return whole(400, JSON_HEADERS, errorBody(started.refused));
    const { request, run, signal } = started;
    try {
      for await (const _ of run.tokens()) {
        // gathered by the run
      }
      if (signal.aborted) throw aborted(signal, call);
      return whole(200, JSON_HEADERS, Buffer.from(JSON.stringify(run.answer(request))));
    } finally {
      run.end();
    }
  }

  stream(call: UpstreamCall): Promise<StreamingResponse> {
    const started = this.start(call);
    if ('refused' in started) {
      const body = errorBody(started.refused);
      return Promise.resolve({ status: 400, headers: JSON_HEADERS, body: once(body), cancel: () => undefined });
    }
    const { request, run } = started;
    return Promise.resolve({
      status: 200,
      headers: SSE_HEADERS,
      body: request.dialect === 'chat' ? chatEvents(run, request) : responsesEvents(run, request),
      cancel: () => run.end(),
    });
  }

  private start(
    call: UpstreamCall,
  ): { refused: string } | { request: GenerationRequest; run: Run; signal: AbortSignal } {
    const controller = new AbortController();
    const signal = AbortSignal.any([call.signal, controller.signal, AbortSignal.timeout(this.options.timeoutMs)]);
    let request: GenerationRequest;
    let prompt: number[];
    try {
      const body = parseBoundedJson(call.body.toString('utf8'));
      if (!isRecord(body)) throw new GenerationRefused('the body must be a JSON object');
      request = call.dialect === 'chat' ? chatRequest(body) : responsesRequest(body);
      prompt = this.engine.prompt(request.messages, request.tools);
    } catch (err) {
      if (err instanceof GenerationRefused || err instanceof ResponsesRequestRefused || err instanceof SyntaxError) {
        return { refused: err.message };
      }
      throw err;
    }
    const run = new Run(this.engine, this.options.model, prompt, request, signal, () => controller.abort());
    return { request, run, signal };
  }
}

/** One generation in progress: its tokens as they come, its text, and how it ended. */
class Run {
  readonly id = randomUUID().replaceAll('-', '');
  readonly created = Math.floor(Date.now() / 1000);
  readonly generated: GeneratedToken[] = [];
  finish: FinishReason = 'stop';
  /** Text already handed out by a stream (`delta`). */
  private sent = '';

  constructor(
    private readonly engine: GgufEngine,
    readonly model: string,
    readonly prompt: number[],
    private readonly request: GenerationRequest,
    readonly signal: AbortSignal,
    readonly end: () => void,
  ) {}

  async *tokens(): AsyncGenerator<GeneratedToken> {
    const generator = this.engine.generate(this.prompt, this.request.sampling, this.signal);
    try {
      for (;;) {
        const next = await generator.next();
        if (next.done) {
          this.finish = next.value;
          return;
        }
        this.generated.push(next.value);
        yield next.value;
      }
    } finally {
      // A reader that stopped early (the agent went away) must still hand the sequence back.
      await generator.return('stop');
    }
  }

  text(): string {
    return this.engine.text(this.generated.map((token) => token.id));
  }

  /**
   * The text not handed out yet that is settled: a trailing replacement character may be a multi-byte character cut
   * between tokens, so it waits for the next token (or the end).
   */
  delta(final: boolean): string {
    const text = this.text();
    const settled = final ? text : text.replace(/\uFFFD+$/, '');
    if (!settled.startsWith(this.sent) || settled.length === this.sent.length) return '';
    const delta = settled.slice(this.sent.length);
    this.sent = settled;
    return delta;
  }

  logprobEntry(token: GeneratedToken): Record<string, unknown> {
    return {
      id: token.id,
      token: this.engine.piece(token.id),
      logprob: token.logprob,
      bytes: null,
      top_logprobs: token.top.map((alt) => ({
        id: alt.id,
        token: this.engine.piece(alt.id),
        logprob: alt.logprob,
        bytes: null,
      })),
    };
  }

  usage(): { prompt_tokens: number; completion_tokens: number; total_tokens: number } {
    return {
      prompt_tokens: this.prompt.length,
      completion_tokens: this.generated.length,
      total_tokens: this.prompt.length + this.generated.length,
    };
  }

  answer(request: GenerationRequest): Record<string, unknown> {
    return request.dialect === 'chat' ? this.chatAnswer(request) : this.responsesObject('completed');
  }

  private chatAnswer(request: GenerationRequest): Record<string, unknown> {
    const choice: Record<string, unknown> = {
      index: 0,
      message: { role: 'assistant', content: this.text() },
      logprobs: request.logprobs ? { content: this.generated.map((token) => this.logprobEntry(token)) } : null,
      finish_reason: this.finish,
    };
    if (request.returnTokenIds) choice.token_ids = this.generated.map((token) => token.id);
    return {
      id: `chatcmpl-${this.id}`,
      object: 'chat.completion',
      created: this.created,
      model: this.model,
      choices: [choice],
      usage: this.usage(),
      ...(request.returnTokenIds ? { prompt_token_ids: this.prompt } : {}),
    };
  }

  responsesObject(status: 'in_progress' | 'completed'): Record<string, unknown> {
    const done = status === 'completed';
    const usage = this.usage();
    const incomplete = done && this.finish === 'length';
    return {
      id: `resp_${this.id}`,
      object: 'response',
      created_at: this.created,
      status: incomplete ? 'incomplete' : status,
      incomplete_details: incomplete ? { reason: 'max_output_tokens' } : null,
      model: this.model,
      output: done ? [this.messageItem('completed')] : [],
      usage: done
        ? {
            input_tokens: usage.prompt_tokens,
            input_tokens_details: { cached_tokens: 0 },
            output_tokens: usage.completion_tokens,
            output_tokens_details: { reasoning_tokens: 0 },
            total_tokens: usage.total_tokens,
          }
        : null,
    };
  }

  messageItem(status: 'in_progress' | 'completed'): Record<string, unknown> {
    const text = status === 'completed' ? this.text() : '';
    return {
      type: 'message',
      id: `msg_${this.id}`,
      status,
      role: 'assistant',
      content: status === 'completed' ? [{ type: 'output_text', text, annotations: [] }] : [],
    };
  }
}

function sse(data: unknown, event?: string): Buffer {
  return Buffer.from(`${event ? `event: ${event}\n` : ''}data: ${JSON.stringify(data)}\n\n`);
}

/** A chat completion's chunks, in the shape OpenAI and vLLM stream them. */
async function* chatEvents(run: Run, request: GenerationRequest): AsyncGenerator<Buffer> {
  const chunk = (choice: Record<string, unknown> | undefined, extra: Record<string, unknown> = {}): Buffer =>
    sse({
      id: `chatcmpl-${run.id}`,
      object: 'chat.completion.chunk',
      created: run.created,
      model: run.model,
      choices: choice ? [choice] : [],
      ...extra,
    });
  try {
    yield chunk(
      { index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null },
      request.returnTokenIds ? { prompt_token_ids: run.prompt } : {},
    );
    for await (const token of run.tokens()) {
      const choice: Record<string, unknown> = {
        index: 0,
        delta: { content: run.delta(false) },
        logprobs: request.logprobs ? { content: [run.logprobEntry(token)] } : null,
        finish_reason: null,
      };
      if (request.returnTokenIds) choice.token_ids = [token.id];
      yield chunk(choice);
    }
    if (run.signal.aborted) throw aborted(run.signal);
    yield chunk({ index: 0, delta: { content: run.delta(true) }, logprobs: null, finish_reason: run.finish });
    if (request.includeUsage) yield chunk(undefined, { usage: run.usage() });
    yield Buffer.from('data: [DONE]\n\n');
  } finally {
    run.end();
  }
}

/** A Responses stream: created, the text's deltas, completed (with the whole response), as OpenAI sends them. */
async function* responsesEvents(run: Run, _request: GenerationRequest): AsyncGenerator<Buffer> {
  let sequence = 0;
  const event = (type: string, data: Record<string, unknown>): Buffer =>
    sse({ type, sequence_number: sequence++, ...data }, type);
  const itemId = `msg_${run.id}`;
  const where = { item_id: itemId, output_index: 0, content_index: 0 };
  try {
    yield event('response.created', { response: run.responsesObject('in_progress') });
    yield event('response.output_item.added', { output_index: 0, item: run.messageItem('in_progress') });
    yield event('response.content_part.added', { ...where, part: { type: 'output_text', text: '', annotations: [] } });
    for await (const _ of run.tokens()) {
      const delta = run.delta(false);
      if (delta !== '') yield event('response.output_text.delta', { ...where, delta });
    }
    if (run.signal.aborted) throw aborted(run.signal);
    const last = run.delta(true);
    if (last !== '') yield event('response.output_text.delta', { ...where, delta: last });
    const text = run.text();
    yield event('response.output_text.done', { ...where, text });
    yield event('response.content_part.done', { ...where, part: { type: 'output_text', text, annotations: [] } });
    yield event('response.output_item.done', { output_index: 0, item: run.messageItem('completed') });
    yield event('response.completed', { response: run.responsesObject('completed') });
  } finally {
    run.end();
  }
}

function aborted(signal: AbortSignal, call?: UpstreamCall): HttpTransportError {
  const timedOut = signal.reason instanceof DOMException && signal.reason.name === 'TimeoutError';
  const kind = timedOut ? 'timeout' : 'aborted';
  const where = `gguf_model:${call?.dialect ?? 'stream'}`;
  return new HttpTransportError(
    kind,
    where,
    timedOut ? 'the generation timed out' : 'the call was cancelled',
    undefined,
    'body',
  );
}

function errorBody(message: string): Buffer {
  return Buffer.from(JSON.stringify({ error: { message, type: 'invalid_request_error', code: null } }));
}

function once(body: Buffer): AsyncIterable<Buffer> {
  return Readable.from([body]) as AsyncIterable<Buffer>;
}

function whole(status: number, headers: IncomingHttpHeaders, body: Buffer): HttpResponse {
  return {
    status,
    headers,
    body,
    setCookies: [],
    text: () => body.toString('utf8'),
    json: () => parseBoundedJson(body.toString('utf8')),
  };
}
