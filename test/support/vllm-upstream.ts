/**
 * A scripted vLLM on loopback, answering `POST /v1/chat/completions` in the shapes vLLM documents for token-id
 * capture: with `logprobs: true, top_logprobs: 0, return_tokens_as_token_ids: true` each
 * `choices[0].logprobs.content[i]` is `{token: "token_id:<n>", logprob, bytes, top_logprobs: []}`; with
 * `return_token_ids: true` the answer has a top-level `prompt_token_ids` and `choices[0].token_ids` (streamed: the
 * prompt's on the first chunk, each chunk's own ids on its choice). `POST /tokenize {messages}` answers `{tokens}`.
 *
 * Its "tokenizer" is one id per UTF-16 unit, and its chat template is append-only, as real ones are:
 *
 *   prompt(messages) = render(m1) … render(mk) + [GEN]     render(assistant) = [GEN] + ids(content) + [EOS]
 *   render(other)    = [ROLE] + ids(content) + [END]        generation        = ids(answer) + [EOS]
 *
 * so a later call's prompt starts with an earlier call's prompt + generation exactly when the caller appended. The
 * answer is `reply to: <last message>`; each token's log-prob is a deterministic function of its id and position.
 * A last message containing `CUT` (streamed) sends the first chunk and then destroys the connection; one containing
 * `FAIL` answers HTTP 400 as vLLM refuses a request; one containing `TOOL` (with tools) answers a call of the first
 * tool, `{"by":1}`, as vLLM's tool parser does; one containing `THINK` adds `reasoning_content` (whole answers). A
 * streamed call with `stream_options.include_usage` ends with a usage chunk. A body without
 * `return_tokens_as_token_ids` gets plain token strings, as vLLM answers then.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { closeServer } from '../../src/http/server.js';

export const GEN = 100_001;
export const EOS = 100_002;
const ROLE = 100_003;
const END = 100_004;

export function ids(text: string): number[] {
  return Array.from(text, (ch) => ch.codePointAt(0)!);
}

export function logProbOf(id: number, position: number): number {
  return -((id % 89) + position) / 64;
}

export interface Message {
  role: string;
  content: string;
}

export function promptIds(messages: readonly Message[]): number[] {
  const out: number[] = [];
  for (const m of messages) {
    if (m.role === 'assistant') out.push(GEN, ...ids(m.content), EOS);
    else out.push(ROLE, ...ids(m.content), END);
  }
  out.push(GEN);
  return out;
}

export function answerText(messages: readonly Message[]): string {
  return `reply to: ${messages.at(-1)?.content ?? ''}`;
}

/**
 * The conversation before model call k of an agent that appends, never rewrites: its opening message, then each
 * earlier answer of this upstream and a `continue <i>` turn.
 */
export function appendedHistory(opening: string, k: number): Message[] {
  const history: Message[] = [{ role: 'user', content: opening }];
  for (let i = 0; i < k; i++) {
    history.push({ role: 'assistant', content: answerText(history) }, { role: 'user', content: `continue ${i}` });
  }
  return history;
}

export interface VllmRequest {
  path: string;
  body: Record<string, unknown>;
}

export interface VllmUpstream {
  /** The base URL, `/v1` included. */
  url: string;
  requests: VllmRequest[];
  /** Ends every kept-alive connection no request is using (the bench's reading of what a caller holds without them). */
  closeIdleConnections(): void;
  close(): Promise<void>;
}

function logprobEntries(generation: readonly number[], start: number, asIds: boolean): unknown[] {
  return generation.map((id, i) => ({
    token: asIds ? `token_id:${id}` : String.fromCodePoint(id % 0x10ffff),
    logprob: logProbOf(id, start + i),
    bytes: [],
    top_logprobs: [],
  }));
}

export const TOOL_ARGUMENTS = '{"by":1}';

/** The tool a `TOOL` message calls: the first of the body's tools, or undefined. */
function toolCalled(body: Record<string, unknown>, messages: Message[]): string | undefined {
  if (!messages.at(-1)?.content.includes('TOOL') || !Array.isArray(body.tools)) return undefined;
  const first = body.tools[0] as { function?: { name?: string } } | undefined;
  return first?.function?.name;
}

function whole(body: Record<string, unknown>, messages: Message[]): Record<string, unknown> {
  const prompt = promptIds(messages);
  const tool = toolCalled(body, messages);
  const text = tool ? TOOL_ARGUMENTS : answerText(messages);
  const generation = [...ids(text), EOS];
  const message: Record<string, unknown> = tool
    ? {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: tool, arguments: text } }],
      }
    : { role: 'assistant', content: text };
  if (messages.at(-1)?.content.includes('THINK')) message.reasoning_content = 'thinking it over';
  const choice: Record<string, unknown> = {
    index: 0,
    message,
    finish_reason: tool ? 'tool_calls' : 'stop',
    logprobs:
      body.logprobs === true
        ? { content: logprobEntries(generation, 0, body.return_tokens_as_token_ids === true) }
        : null,
  };
  if (body.return_token_ids === true) choice.token_ids = generation;
  return {
    id: `chatcmpl-${prompt.length}`,
    object: 'chat.completion',
    model: body.model,
    choices: [choice],
    usage: {
      prompt_tokens: prompt.length,
      completion_tokens: generation.length,
      total_tokens: prompt.length + generation.length,
    },
    ...(body.return_token_ids === true ? { prompt_token_ids: prompt } : {}),
  };
}

/** The stream's chunks: the answer's text in two pieces, the end token, then `[DONE]`. */
function chunks(body: Record<string, unknown>, messages: Message[]): string[] {
  const prompt = promptIds(messages);
  const tool = toolCalled(body, messages);
  const text = tool ? TOOL_ARGUMENTS : answerText(messages);
  const pieces = [text.slice(0, 5), text.slice(5), ''];
  const asIds = body.return_tokens_as_token_ids === true;
  let position = 0;
  const out = pieces.map((piece, i) => {
    const generation = i === 2 ? [EOS] : ids(piece);
    const toolDelta = (fn: Record<string, unknown>): Record<string, unknown> => ({
      tool_calls: [{ index: 0, ...(i === 0 ? { id: 'call_1', type: 'function' } : {}), function: fn }],
    });
    const delta = tool
      ? toolDelta(i === 0 ? { name: tool, arguments: piece } : { arguments: piece })
      : { content: piece };
    const choice: Record<string, unknown> = {
      index: 0,
      delta: i === 0 ? { role: 'assistant', ...delta } : delta,
      finish_reason: i === 2 ? (tool ? 'tool_calls' : 'stop') : null,
      logprobs: body.logprobs === true ? { content: logprobEntries(generation, position, asIds) } : null,
    };
    position += generation.length;
    if (body.return_token_ids === true) choice.token_ids = generation;
    const chunk = {
      id: 'chatcmpl-stream',
      object: 'chat.completion.chunk',
      model: body.model,
      choices: [choice],
      ...(i === 0 && body.return_token_ids === true ? { prompt_token_ids: prompt } : {}),
    };
    return `data: ${JSON.stringify(chunk)}\n\n`;
  });
  const options = body.stream_options as { include_usage?: boolean } | undefined;
  if (options?.include_usage === true) {
    const usage = { prompt_tokens: prompt.length, completion_tokens: position, total_tokens: prompt.length + position };
    out.push(
      `data: ${JSON.stringify({ id: 'chatcmpl-stream', object: 'chat.completion.chunk', choices: [], usage })}\n\n`,
    );
  }
  return [...out, 'data: [DONE]\n\n'];
}

function messagesOf(body: Record<string, unknown>): Message[] {
  const raw = Array.isArray(body.messages) ? (body.messages as Record<string, unknown>[]) : [];
  return raw.map((m) => ({ role: String(m.role), content: typeof m.content === 'string' ? m.content : '' }));
}

export interface VllmUpstreamOptions {
  /**
   * How long an idle keep-alive connection stays open (Node's default: 5 s). The bench raises it: a caller that
   * reuses a connection just as the server times it out gets it closed under its request.
   */
  keepAliveTimeoutMs?: number;
}

export async function startVllmUpstream(options: VllmUpstreamOptions = {}): Promise<VllmUpstream> {
  const requests: VllmRequest[] = [];
  const server = http.createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(parts).toString('utf8') || '{}') as Record<string, unknown>;
      const url = req.url ?? '';
      requests.push({ path: url, body });
      const messages = messagesOf(body);
      if (url === '/tokenize') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ tokens: promptIds(messages), count: promptIds(messages).length }));
        return;
      }
      if (url !== '/v1/chat/completions') {
        res.writeHead(404).end();
        return;
      }
      if (messages.at(-1)?.content.includes('FAIL')) {
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ object: 'error', message: 'FAIL asked for', type: 'BadRequestError', code: 400 }));
        return;
      }
      if (body.stream !== true) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(whole(body, messages)));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const events = chunks(body, messages);
      if (messages.at(-1)?.content.includes('CUT')) {
        res.write(events[0]!, () => res.destroy());
        return;
      }
      res.end(events.join(''));
    });
  });
  if (options.keepAliveTimeoutMs !== undefined) server.keepAliveTimeout = options.keepAliveTimeoutMs;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    closeIdleConnections: () => server.closeIdleConnections(),
    close: () => closeServer(server),
  };
}
