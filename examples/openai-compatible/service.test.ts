import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, beforeEach, describe, test } from 'node:test';
import { INCREMENT_COUNTER_TOOL } from '../../src/check/counter-sim.js';
import { request } from '../../src/http/client.js';
import { closeServer } from '../../src/http/server.js';
import { serve, type RunningService } from '../../src/service/index.js';
import { assertAgentCheckPasses, DIST_EXAMPLES, spawnService } from '../testing/helpers.js';
import { createOpenAiDecide, toChatMessages } from './brain.js';

/**
 * A fake OpenAI-compatible model server on loopback. It solves counter tasks the way a model would: ask for the
 * increments it reads in the user's text, then for the count, then answer. It records every request.
 */
interface Recorded {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: Record<string, any>;
}

type Event = { kind: 'user'; text: string } | { kind: 'call'; name: string } | { kind: 'result'; text: string };

function nextMove(events: Event[]): { calls: { name: string; arguments: string }[] } | { text: string } {
  const adds = events.flatMap((e) => (e.kind === 'user' ? [...e.text.matchAll(/add (\d+)/g)].map((m) => Number(m[1])) : []));
  const asked = events.filter((e): e is Extract<Event, { kind: 'call' }> => e.kind === 'call');
  const incrementsAsked = asked.filter((e) => e.name === 'increment_counter').length;
  if (incrementsAsked < adds.length) {
    return { calls: adds.slice(incrementsAsked).map((count) => ({ name: 'increment_counter', arguments: JSON.stringify({ count }) })) };
  }
  const count = [...events].reverse().find((e) => e.kind === 'result' && e.text.startsWith('{"count"'));
  if (!count) return { calls: [{ name: 'get_counter_value', arguments: '{}' }] };
  return { text: `The count is ${(JSON.parse((count as { text: string }).text) as { count: number }).count}.` };
}

async function startFakeModelServer() {
  const requests: Recorded[] = [];
  let ids = 0;
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (chunk: Buffer) => (raw += chunk.toString('utf8')));
    req.on('end', () => {
      const body = JSON.parse(raw) as Record<string, any>;
      requests.push({ path: req.url ?? '', headers: req.headers, body });
      const send = (status: number, payload: unknown): void => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(payload));
      };
      if (body.model === 'needs-a-key') return send(401, { error: { message: 'Incorrect API key provided' } });
      if (req.url === '/v1/chat/completions') {
        const events: Event[] = (body.messages as any[]).flatMap((m): Event[] => {
          if (m.role === 'user') return [{ kind: 'user', text: m.content }];
          if (m.role === 'tool') return [{ kind: 'result', text: m.content }];
          if (m.role === 'assistant') return (m.tool_calls ?? []).map((c: any) => ({ kind: 'call', name: c.function.name }));
          return [];
        });
        const move = nextMove(events);
        const message =
          'calls' in move
            ? { role: 'assistant', content: null, tool_calls: move.calls.map((c) => ({ id: `call_m${++ids}`, type: 'function', function: c })) }
            : { role: 'assistant', content: move.text };
        return send(200, {
          id: 'chatcmpl-1',
          object: 'chat.completion',
          choices: [{ index: 0, message, finish_reason: 'calls' in move ? 'tool_calls' : 'stop' }],
          usage: { prompt_tokens: 50, completion_tokens: 10, total_tokens: 60, prompt_tokens_details: { cached_tokens: 20 }, completion_tokens_details: { reasoning_tokens: 4 } },
        });
      }
      if (req.url === '/v1/responses') {
        const input = typeof body.input === 'string' ? [{ role: 'user', content: body.input }] : (body.input as any[]);
        const events: Event[] = input.flatMap((item): Event[] => {
          if ((item.type ?? 'message') === 'message' && item.role === 'user') return [{ kind: 'user', text: String(item.content) }];
          if (item.type === 'function_call') return [{ kind: 'call', name: item.name }];
          if (item.type === 'function_call_output') return [{ kind: 'result', text: item.output }];
          return [];
        });
        const move = nextMove(events);
        const output =
          'calls' in move
            ? move.calls.map((c) => ({ type: 'function_call', id: `fc_m${++ids}`, call_id: `call_m${ids}`, ...c }))
            : [{ type: 'message', id: 'msg_m', role: 'assistant', content: [{ type: 'output_text', text: move.text, annotations: [] }] }];
        return send(200, {
          id: 'resp_m',
          object: 'response',
          output,
          usage: { input_tokens: 70, output_tokens: 9, total_tokens: 79, input_tokens_details: { cached_tokens: 0 }, output_tokens_details: { reasoning_tokens: 2 } },
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

const TASK = {
  input: [{ role: 'user', content: 'add 1 then add 2 then get the count' }],
  tools: [
    { type: 'function', name: 'increment_counter', description: 'Add to the counter', parameters: { type: 'object', properties: { count: { type: 'integer' } } }, strict: true },
    { type: 'function', name: 'get_counter_value', parameters: { type: 'object', properties: {} }, strict: true },
  ],
};

describe('openai-compatible service against a fake model server', () => {
  let model: Awaited<ReturnType<typeof startFakeModelServer>>;
  before(async () => {
    model = await startFakeModelServer();
  });
  after(() => model.close());
  beforeEach(() => {
    model.requests.length = 0;
  });

  const withService = async (options: { api?: 'chat' | 'responses'; model?: string }, body: (service: RunningService) => Promise<void>) => {
    const decide = createOpenAiDecide({ modelUrl: model.url, model: options.model ?? 'fake-model', apiKey: 'sk-test', api: options.api ?? 'chat' });
    const service = await serve(decide, { port: 0, brainName: options.model ?? 'fake-model', log: () => {} });
    try {
      await body(service);
    } finally {
      await service.close();
    }
  };

  test('chat API: passes gym agent check; tools, tool calls and tool results are mapped to chat form and back', async () => {
    await withService({}, async (service) => {
      await assertAgentCheckPasses(service.url);
    });
    const first = model.requests[0]!;
    assert.equal(first.path, '/v1/chat/completions');
    assert.equal(first.headers.authorization, 'Bearer sk-test');
    assert.equal(first.body.model, 'fake-model');
    assert.deepEqual(first.body.tools[0], {
      type: 'function',
      function: { name: 'increment_counter', parameters: INCREMENT_COUNTER_TOOL.parameters },
    });
    const third = model.requests[2]!.body.messages as any[];
    assert.deepEqual(third.map((m) => m.role), ['user', 'assistant', 'tool', 'tool', 'assistant', 'tool']);
    assert.deepEqual(third[1].tool_calls.map((c: any) => [c.function.name, c.function.arguments]), [
      ['increment_counter', '{"count":1}'],
      ['increment_counter', '{"count":2}'],
    ]);
    assert.equal(third[2].tool_call_id, third[1].tool_calls[0].id);
    assert.equal(third[5].content, '{"count":6}');
  });

  test("chat API: the model's own usage is reported in the Responses usage", async () => {
    await withService({}, async (service) => {
      const res = await request(`${service.url}/v1/responses`, { method: 'POST', json: TASK, timeoutMs: 5000 });
      assert.deepEqual((res.json() as Record<string, unknown>).usage, {
        input_tokens: 50,
        input_tokens_details: { cached_tokens: 20 },
        output_tokens: 10,
        output_tokens_details: { reasoning_tokens: 4 },
        total_tokens: 60,
      });
    });
  });

  test('responses API: passes gym agent check; items go to the model without this service\'s ids', async () => {
    await withService({ api: 'responses' }, async (service) => {
      await assertAgentCheckPasses(service.url);
    });
    assert.ok(model.requests.every((r) => r.path === '/v1/responses'));
    const later = model.requests[1]!.body.input as any[];
    assert.deepEqual(later.map((item) => item.type ?? 'message'), ['message', 'function_call', 'function_call', 'function_call_output', 'function_call_output']);
    assert.ok(later.every((item) => !('id' in item)));
    assert.equal(model.requests[0]!.body.tools[0].name, 'increment_counter');
  });

  test('a model server error answers HTTP 500 naming the status and the message', async () => {
    await withService({ model: 'needs-a-key' }, async (service) => {
      const res = await request(`${service.url}/v1/responses`, { method: 'POST', json: TASK, timeoutMs: 5000 });
      assert.equal(res.status, 500);
      assert.match((res.json() as { detail: string }).detail, /model server answered HTTP 401 .*Incorrect API key provided/);
    });
  });

  test('runs with one command, the key read from the variable --api-key-env names', async () => {
    const service = await spawnService(
      process.execPath,
      [path.join(DIST_EXAMPLES, 'openai-compatible/service.js'), '--port', '0', '--model-url', model.url, '--model', 'fake-model', '--api-key-env', 'MY_MODEL_KEY'],
      { env: { ...process.env, MY_MODEL_KEY: 'sk-from-env' } },
    );
    try {
      const res = await request(`${service.url}/v1/responses`, { method: 'POST', json: TASK, timeoutMs: 5000 });
      assert.equal(res.status, 200, res.text());
      assert.equal(model.requests[0]!.headers.authorization, 'Bearer sk-from-env');
    } finally {
      await service.close();
    }
  });
});

test('chat mapping: an assistant message followed by calls becomes one assistant turn; system and developer map to system', () => {
  assert.deepEqual(
    toChatMessages([
      { role: 'developer', content: 'Be brief.' },
      { role: 'user', content: [{ type: 'input_text', text: 'add 1' }] },
      { type: 'message', role: 'assistant', id: 'm', content: [{ type: 'output_text', text: 'On it.', annotations: [] }] },
      { type: 'function_call', call_id: 'c1', name: 'increment_counter', arguments: '{"count":1}' },
      { type: 'reasoning', id: 'r', summary: [] },
      { type: 'function_call_output', call_id: 'c1', output: '{"success":true}' },
    ]),
    [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'add 1' },
      { role: 'assistant', content: 'On it.', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'increment_counter', arguments: '{"count":1}' } }] },
      { role: 'tool', tool_call_id: 'c1', content: '{"success":true}' },
    ],
  );
});
