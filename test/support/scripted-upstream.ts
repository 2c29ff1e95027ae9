/**
 * A scripted OpenAI-compatible upstream on loopback, for the model server's tests: `POST /v1/chat/completions` and
 * `POST /v1/responses`, whole or streamed (`stream: true`), always with usage. What it answers is read from the last
 * user message, so concurrent callers each get their own answer:
 *
 *   usage: tokens_in = the length of that message, tokens_out = 7, cached 2, reasoning 1 (the test can tell rollouts
 *          apart by the lengths of their messages);
 *   "HOSTILE huge"        a 2 MiB answer          "HOSTILE deep"     JSON nested 100,000 levels
 *   "HOSTILE bad-usage"   usage.input_tokens "12" "HOSTILE status"   HTTP 500 echoing the request's Authorization
 *   "HOSTILE hold"        (streaming) the first delta, then nothing more until `release()`
 *   "HOSTILE cut"         (streaming) the first delta, then the connection is destroyed
 *
 * Every request is recorded (path, headers, body).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { closeServer } from '../../src/http/server.js';
import { gate, type Gate } from './wait.js';

export interface UpstreamRequest {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: Record<string, unknown>;
}

export interface ScriptedUpstream {
  /** The base URL, `/v1` included. */
  url: string;
  requests: UpstreamRequest[];
  /** Lets every stream held so far ("HOSTILE hold") finish; later ones are held again. */
  release(): void;
  close(): Promise<void>;
}

const OUT_TOKENS = 7;

function lastUserText(body: Record<string, unknown>): string {
  const items = (
    Array.isArray(body.messages) ? body.messages : Array.isArray(body.input) ? body.input : [body.input]
  ) as unknown[];
  for (const item of [...items].reverse()) {
    if (typeof item === 'string') return item;
    const message = item as { role?: string; content?: unknown };
    if (message.role === 'user')
      return typeof message.content === 'string' ? message.content : JSON.stringify(message.content);
  }
  return '';
}

function usageFor(dialect: 'chat' | 'responses', text: string): Record<string, unknown> {
  const tokensIn = text.length;
  return dialect === 'chat'
    ? {
        prompt_tokens: tokensIn,
        completion_tokens: OUT_TOKENS,
        total_tokens: tokensIn + OUT_TOKENS,
        prompt_tokens_details: { cached_tokens: 2 },
        completion_tokens_details: { reasoning_tokens: 1 },
      }
    : {
        input_tokens: tokensIn,
        output_tokens: OUT_TOKENS,
        total_tokens: tokensIn + OUT_TOKENS,
        input_tokens_details: { cached_tokens: 2 },
        output_tokens_details: { reasoning_tokens: 1 },
      };
}

function wholeAnswer(dialect: 'chat' | 'responses', model: string, text: string): Record<string, unknown> {
  const answer = `echo: ${text}`;
  if (dialect === 'chat') {
    return {
      id: 'chatcmpl-scripted',
      object: 'chat.completion',
      model,
      choices: [{ index: 0, message: { role: 'assistant', content: answer }, finish_reason: 'stop' }],
      usage: usageFor('chat', text),
    };
  }
  return {
    id: 'resp_scripted',
    object: 'response',
    model,
    status: 'completed',
    output: [
      {
        type: 'message',
        id: 'msg_s',
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text: answer, annotations: [] }],
      },
    ],
    usage: usageFor('responses', text),
  };
}

function sse(data: unknown, event?: string): string {
  return `${event ? `event: ${event}\n` : ''}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`;
}

/** The stream's events: the first (with the first delta) and the rest (the other delta and the terminal event). */
function streamEvents(
  dialect: 'chat' | 'responses',
  model: string,
  text: string,
  withUsage: boolean,
): [string, string] {
  if (dialect === 'chat') {
    const chunk = (delta: unknown, finish: string | null, usage?: unknown): string =>
      sse({
        id: 'chatcmpl-s',
        object: 'chat.completion.chunk',
        model,
        choices: [{ index: 0, delta, finish_reason: finish }],
        ...(usage ? { usage } : {}),
      });
    const last = withUsage
      ? sse({ id: 'chatcmpl-s', object: 'chat.completion.chunk', model, choices: [], usage: usageFor('chat', text) })
      : '';
    return [
      chunk({ role: 'assistant', content: 'echo: ' }, null),
      chunk({ content: text }, null) + chunk({}, 'stop') + last + sse('[DONE]'),
    ];
  }
  const response = wholeAnswer('responses', model, text);
  return [
    sse(
      { type: 'response.created', response: { ...response, status: 'in_progress', output: [], usage: null } },
      'response.created',
    ) + sse({ type: 'response.output_text.delta', delta: 'echo: ' }, 'response.output_text.delta'),
    sse({ type: 'response.output_text.delta', delta: text }, 'response.output_text.delta') +
      sse({ type: 'response.completed', response }, 'response.completed'),
  ];
}

function hostileBody(kind: string, dialect: 'chat' | 'responses', model: string, text: string): string | undefined {
  if (kind === 'huge')
    return JSON.stringify({ ...wholeAnswer(dialect, model, text), padding: 'x'.repeat(2 * 1024 * 1024) });
  if (kind === 'deep') return '['.repeat(100_000) + ']'.repeat(100_000);
  if (kind === 'bad-usage') {
    const answer = wholeAnswer(dialect, model, text);
    return JSON.stringify({ ...answer, usage: { input_tokens: '12', prompt_tokens: '12', output_tokens: 3 } });
  }
  return undefined;
}

export async function startScriptedUpstream(): Promise<ScriptedUpstream> {
  const requests: UpstreamRequest[] = [];
  let held: Gate = gate();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
      requests.push({ path: req.url ?? '', headers: req.headers, body });
      const dialect =
        req.url === '/v1/chat/completions' ? 'chat' : req.url === '/v1/responses' ? 'responses' : undefined;
      if (!dialect)
        return void res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"no route"}}');
      const text = lastUserText(body);
      const model = String(body.model);
      const hostile = /HOSTILE (\S+)/.exec(text)?.[1];
      if (hostile === 'status') {
        res.writeHead(500, { 'content-type': 'application/json' });
        return void res.end(
          JSON.stringify({ error: { message: `upstream broke; you sent ${req.headers.authorization}` } }),
        );
      }
      const bad = hostile ? hostileBody(hostile, dialect, model, text) : undefined;
      if (bad !== undefined) return void res.writeHead(200, { 'content-type': 'application/json' }).end(bad);
      if (body.stream !== true) {
        return void res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify(wholeAnswer(dialect, model, text)));
      }
      const include = (body.stream_options as { include_usage?: boolean } | undefined)?.include_usage === true;
      const [first, rest] = streamEvents(dialect, model, text, dialect === 'responses' || include);
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      // The connection dies mid-stream: once the first event is out.
      if (hostile === 'cut') return void res.write(first, () => res.socket?.destroy());
      res.write(first);
      if (hostile === 'hold')
        void held.opened.then(() => res.end(rest)); // the gate as it is now: release() re-arms
      else res.end(rest);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    requests,
    release: () => {
      held.open();
      held = gate();
    },
    close: () => {
      held.open();
      return closeServer(server);
    },
  };
}
