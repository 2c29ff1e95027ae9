import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { closeServer } from '../../src/http/server.js';

/**
 * A fake OpenAI-compatible model server on loopback. It solves counter tasks the way a model would: ask for the
 * increments it reads in the user's text, then for the count, then answer. It records every request.
 */
export interface Recorded {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: RecordedBody;
}

/** A chat message or a Responses item as a brain sends it: the fields this fake reads and the tests assert on. */
export interface RecordedItem {
  type?: string;
  role?: string;
  content?: unknown;
  name?: string;
  output?: unknown;
  tool_call_id?: string;
  tool_calls?: { id: string; function: { name: string; arguments: string } }[];
}

/** A request body, parsed but not validated: a test that sends something else sees it fail on the field it lacks. */
interface RecordedBody {
  model?: string;
  messages?: RecordedItem[];
  input?: string | RecordedItem[];
  tools?: { name?: string; [key: string]: unknown }[];
}

type Event = { kind: 'user'; text: string } | { kind: 'call'; name: string } | { kind: 'result'; text: string };

function nextMove(events: Event[]): { calls: { name: string; arguments: string }[] } | { text: string } {
  const adds = events.flatMap((e) =>
    e.kind === 'user' ? [...e.text.matchAll(/add (\d+)/g)].map((m) => Number(m[1])) : [],
  );
  const asked = events.filter((e): e is Extract<Event, { kind: 'call' }> => e.kind === 'call');
  const incrementsAsked = asked.filter((e) => e.name === 'increment_counter').length;
  if (incrementsAsked < adds.length) {
    return {
      calls: adds
        .slice(incrementsAsked)
        .map((count) => ({ name: 'increment_counter', arguments: JSON.stringify({ count }) })),
    };
  }
  const count = [...events].reverse().find((e) => e.kind === 'result' && e.text.startsWith('{"count"'));
  if (!count) return { calls: [{ name: 'get_counter_value', arguments: '{}' }] };
  return { text: `The count is ${(JSON.parse((count as { text: string }).text) as { count: number }).count}.` };
}

export async function startFakeModelServer() {
  const requests: Recorded[] = [];
  let ids = 0;
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (chunk: Buffer) => (raw += chunk.toString('utf8')));
    req.on('end', () => {
      const body = JSON.parse(raw) as RecordedBody;
      requests.push({ path: req.url ?? '', headers: req.headers, body });
      const send = (status: number, payload: unknown): void => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(payload));
      };
      if (body.model === 'needs-a-key') return send(401, { error: { message: 'Incorrect API key provided' } });
      if (req.url === '/v1/chat/completions') {
        const events: Event[] = body.messages!.flatMap((m): Event[] => {
          if (m.role === 'user') return [{ kind: 'user', text: m.content as string }];
          if (m.role === 'tool') return [{ kind: 'result', text: m.content as string }];
          if (m.role === 'assistant') return (m.tool_calls ?? []).map((c) => ({ kind: 'call', name: c.function.name }));
          return [];
        });
        const move = nextMove(events);
        const message =
          'calls' in move
            ? {
                role: 'assistant',
                content: null,
                tool_calls: move.calls.map((c) => ({ id: `call_m${++ids}`, type: 'function', function: c })),
              }
            : { role: 'assistant', content: move.text };
        return send(200, {
          id: 'chatcmpl-1',
          object: 'chat.completion',
          choices: [{ index: 0, message, finish_reason: 'calls' in move ? 'tool_calls' : 'stop' }],
          usage: {
            prompt_tokens: 50,
            completion_tokens: 10,
            total_tokens: 60,
            prompt_tokens_details: { cached_tokens: 20 },
            completion_tokens_details: { reasoning_tokens: 4 },
          },
        });
      }
      if (req.url === '/v1/responses') {
        const input: RecordedItem[] =
          typeof body.input === 'string' ? [{ role: 'user', content: body.input }] : body.input!;
        const events: Event[] = input.flatMap((item): Event[] => {
          if ((item.type ?? 'message') === 'message' && item.role === 'user')
            return [{ kind: 'user', text: String(item.content) }];
          if (item.type === 'function_call') return [{ kind: 'call', name: item.name as string }];
          if (item.type === 'function_call_output') return [{ kind: 'result', text: item.output as string }];
          return [];
        });
        const move = nextMove(events);
        const output =
          'calls' in move
            ? move.calls.map((c) => ({ type: 'function_call', id: `fc_m${++ids}`, call_id: `call_m${ids}`, ...c }))
            : [
                {
                  type: 'message',
                  id: 'msg_m',
                  role: 'assistant',
                  content: [{ type: 'output_text', text: move.text, annotations: [] }],
                },
              ];
        return send(200, {
          id: 'resp_m',
          object: 'response',
          output,
          usage: {
            input_tokens: 70,
            output_tokens: 9,
            total_tokens: 79,
            input_tokens_details: { cached_tokens: 0 },
            output_tokens_details: { reasoning_tokens: 2 },
          },
        });
      }
      send(404, { error: { message: `no route ${req.url}` } });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    requests,
    close: () => closeServer(server),
  };
}
