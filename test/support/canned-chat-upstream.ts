/**
 * An OpenAI-compatible `/v1/chat/completions` on loopback that answers whatever the test set last (`answer`), and
 * records every request (path, headers, parsed body): for services that call a model and must be checked on what
 * they sent and on how they read the answer.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { closeServer } from '../../src/http/server.js';

export interface CannedRequest {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: Record<string, unknown>;
}

export interface CannedAnswer {
  status: number;
  /** Sent as JSON; a string is sent as it is. */
  body: unknown;
}

export interface CannedChatUpstream {
  /** The base URL, `/v1` included. */
  url: string;
  requests: CannedRequest[];
  /** What the next requests get; set it before each call. */
  answer: CannedAnswer;
  close(): Promise<void>;
}

/** A whole chat answer whose message has `content` (and `tool_calls`, when given), with usage 120 in / 9 out. */
export function chatAnswer(
  content: string | null,
  options: { toolCalls?: { id: string; name: string; arguments: string }[]; finishReason?: string } = {},
): CannedAnswer {
  const toolCalls = options.toolCalls?.map((call) => ({
    id: call.id,
    type: 'function',
    function: { name: call.name, arguments: call.arguments },
  }));
  return {
    status: 200,
    body: {
      id: 'chatcmpl-canned',
      object: 'chat.completion',
      model: 'canned',
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content, ...(toolCalls ? { tool_calls: toolCalls } : {}) },
          finish_reason: options.finishReason ?? (toolCalls ? 'tool_calls' : 'stop'),
        },
      ],
      usage: { prompt_tokens: 120, completion_tokens: 9, total_tokens: 129 },
    },
  };
}

export async function startCannedChatUpstream(): Promise<CannedChatUpstream> {
  const upstream: CannedChatUpstream = {
    url: '',
    requests: [],
    answer: { status: 500, body: { error: { message: 'no answer set by the test' } } },
    close: () => closeServer(server),
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      upstream.requests.push({
        path: req.url ?? '',
        headers: req.headers,
        body: (text ? JSON.parse(text) : {}) as Record<string, unknown>,
      });
      const { status, body } =
        req.url === '/v1/chat/completions' && req.method === 'POST'
          ? upstream.answer
          : { status: 404, body: { error: { message: 'no route' } } };
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(typeof body === 'string' ? body : JSON.stringify(body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  upstream.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  return upstream;
}
