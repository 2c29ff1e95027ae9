import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { validateResponse } from '../contract/index.js';
import { CookieJar } from '../http/cookies.js';
import { closeServer } from '../http/server.js';
import { request, type HttpResponse } from '../http/client.js';
import {
  createHandler,
  parseJsonDecision,
  renderConversation,
  serve,
  toolHistory,
  type Decide,
  type DecideContext,
  type RunningService,
} from './index.js';

const TOOLS = [
  {
    type: 'function',
    name: 'increment_counter',
    parameters: { type: 'object', properties: { count: { type: 'integer' } } },
    strict: true,
  },
  { type: 'function', name: 'get_counter_value', parameters: { type: 'object', properties: {} }, strict: true },
];
const TASK = { input: [{ role: 'user', content: 'add 1 then add 2 then get the count' }], tools: TOOLS };

function post(url: string, body: unknown, jar?: CookieJar): Promise<HttpResponse> {
  const options = typeof body === 'string' ? { jsonText: body } : { json: body };
  // The bound is only an upper one: generous, so a busy machine is never mistaken for a broken service.
  return request(`${url}/v1/responses`, { method: 'POST', ...options, timeoutMs: 30_000, ...(jar ? { jar } : {}) });
}

/** An output item of the service's reply, with the fields these tests read. */
interface ReplyItem {
  type: string;
  id: string;
  name?: string;
  arguments?: string;
  call_id?: string;
  output?: string;
  content?: Array<{ text: string }>;
}

/** The service's JSON reply as these tests read it: a Responses object, or an error's `detail`. */
interface Body {
  model: string;
  object: string;
  output: ReplyItem[];
  usage: unknown;
  detail: string;
}

describe('agent-service kit', () => {
  let decide: Decide = () => ({ final: 'unset' });
  const seen: DecideContext[] = [];
  let service: RunningService;
  before(async () => {
    service = await serve(
      (conversation, tools, ctx) => {
        seen.push(ctx);
        return decide(conversation, tools, ctx);
      },
      { port: 0, brainName: 'test-brain', log: () => {} },
    );
  });
  after(() => service.close());

  test('asks become unpaired function_call items in the exact shape, with complete usage and the brain as model', async () => {
    decide = () => ({
      toolCalls: [{ name: 'increment_counter', arguments: { count: 1 } }, { name: 'get_counter_value' }],
    });
    const res = await post(service.url, TASK);
    assert.equal(res.status, 200);
    const body = res.json() as Body;
    assert.equal(validateResponse(body).ok, true, JSON.stringify(validateResponse(body)));
    assert.equal(body.model, 'test-brain');
    assert.equal(body.object, 'response');
    assert.equal(body.output.length, 2);
    const [first, second] = body.output as [ReplyItem, ReplyItem];
    assert.deepEqual(Object.keys(first).sort(), ['arguments', 'call_id', 'id', 'name', 'status', 'type']);
    assert.equal(first.type, 'function_call');
    assert.equal(first.name, 'increment_counter');
    assert.equal(first.arguments, '{"count":1}');
    assert.equal(second.arguments, '{}');
    assert.notEqual(first.call_id, second.call_id);
    assert.deepEqual(body.usage, {
      input_tokens: 0,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: 0,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 0,
    });
  });

  test('a final answer is one assistant message with output_text and annotations', async () => {
    decide = () => ({ final: 'The count is 6.', usage: { inputTokens: 120, outputTokens: 7, cachedTokens: 100 } });
    const body = (await post(service.url, TASK)).json() as Body;
    assert.equal(body.output.length, 1);
    const message = body.output[0]!;
    assert.match(message.id, /^msg_/);
    assert.deepEqual(
      { ...message, id: 'x' },
      {
        type: 'message',
        id: 'x',
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text: 'The count is 6.', annotations: [] }],
      },
    );
    assert.deepEqual(body.usage, {
      input_tokens: 120,
      input_tokens_details: { cached_tokens: 100 },
      output_tokens: 7,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 127,
    });
  });

  test('internal tool records become paired call + output items sharing a call_id, before the asks', async () => {
    decide = () => ({
      internal: [{ name: 'web_search', arguments: { q: 'counter' }, output: { hits: 3 } }],
      toolCalls: [{ name: 'get_counter_value', arguments: {} }],
    });
    const body = (await post(service.url, TASK)).json() as Body;
    assert.equal(validateResponse(body).ok, true);
    assert.deepEqual(
      body.output.map((item) => item.type),
      ['function_call', 'function_call_output', 'function_call'],
    );
    assert.equal(body.output[0]!.name, 'web_search');
    assert.equal(body.output[1]!.call_id, body.output[0]!.call_id);
    assert.equal(body.output[1]!.output, '{"hits":3}');
    assert.notEqual(body.output[2]!.call_id, body.output[0]!.call_id);
  });

  test("the model's reply text goes out as an assistant message before the calls, and once with a final", async () => {
    const reply = '{"tool": "get_counter_value", "arguments": {}}';
    decide = () => ({ modelText: reply, toolCalls: [{ name: 'get_counter_value', arguments: {} }] });
    const asked = (await post(service.url, TASK)).json() as Body;
    assert.equal(validateResponse(asked).ok, true);
    assert.deepEqual(
      asked.output.map((item) => item.type),
      ['message', 'function_call'],
    );
    assert.equal(asked.output[0]!.content![0]!.text, reply);
    decide = () => ({ modelText: '{"final": "3"}', final: '3' });
    const parsed = (await post(service.url, TASK)).json() as Body;
    assert.deepEqual(
      parsed.output.map((item) => item.content![0]!.text),
      ['{"final": "3"}', '3'],
    );
    decide = () => ({ modelText: 'the count is 3', final: 'the count is 3' });
    const plain = (await post(service.url, TASK)).json() as Body;
    assert.equal(plain.output.length, 1);
  });

  test('arguments given as JSON text are sent verbatim', async () => {
    decide = () => ({ toolCalls: [{ name: 'increment_counter', arguments: '{"count": 2 }' }] });
    const body = (await post(service.url, TASK)).json() as Body;
    assert.equal(body.output[0]!.arguments, '{"count": 2 }');
  });

  test('a cookie ties calls of one rollout to one state object; a call without it starts a clean rollout', async () => {
    decide = (_c, _t, ctx) => {
      ctx.state.calls = ((ctx.state.calls as number | undefined) ?? 0) + 1;
      return { final: `call ${String(ctx.state.calls)} at step ${ctx.step}` };
    };
    const jar = new CookieJar();
    const first = await post(service.url, TASK, jar);
    assert.equal(first.setCookies.length, 1);
    assert.match(first.setCookies[0]!, /^tsgym_rollout=[0-9a-f]{32}; Path=\//);
    const second = await post(service.url, TASK, jar);
    assert.deepEqual(second.setCookies, [], 'the cookie is set on the first call only');
    assert.equal((second.json() as Body).output[0]!.content![0]!.text, 'call 2 at step 2');
    const fresh = await post(service.url, TASK);
    assert.equal((fresh.json() as Body).output[0]!.content![0]!.text, 'call 1 at step 1');
    assert.notEqual(fresh.setCookies[0], first.setCookies[0]);
  });

  test('call ids stay unique across every call of a rollout', async () => {
    decide = () => ({ toolCalls: [{ name: 'get_counter_value' }, { name: 'get_counter_value' }] });
    const jar = new CookieJar();
    const ids = new Set<string | undefined>();
    for (let i = 0; i < 5; i++) {
      for (const item of ((await post(service.url, TASK, jar)).json() as Body).output) ids.add(item.call_id);
    }
    assert.equal(ids.size, 10);
  });

  test('a string input reaches decide as one user message', async () => {
    let received: unknown;
    decide = (conversation) => {
      received = conversation;
      return { final: 'ok' };
    };
    const res = await post(service.url, { input: 'just a string' });
    assert.equal(res.status, 200);
    assert.deepEqual(received, [{ role: 'user', content: 'just a string' }]);
  });

  test('asking for a tool the request did not declare answers 500 naming the tool and the declared ones', async () => {
    decide = () => ({ toolCalls: [{ name: 'web_search', arguments: {} }] });
    const res = await post(service.url, TASK);
    assert.equal(res.status, 500);
    const detail = (res.json() as Body).detail;
    assert.match(detail, /asked for tool 'web_search'/);
    assert.match(detail, /declared: increment_counter, get_counter_value/);
  });

  test('a decide that throws answers 500 with its message; a malformed decision names what is wrong', async () => {
    decide = () => {
      throw new Error('model backend unreachable');
    };
    let res = await post(service.url, TASK);
    assert.equal(res.status, 500);
    assert.equal((res.json() as Body).detail, 'decide() failed: model backend unreachable');

    decide = () => Promise.resolve({ toolCalls: [] });
    res = await post(service.url, TASK);
    assert.equal(res.status, 500);
    assert.match((res.json() as Body).detail, /toolCalls that is not a non-empty list/);

    decide = () => ({ toolCalls: [{ name: 'get_counter_value' }], final: 'x' });
    res = await post(service.url, TASK);
    assert.match((res.json() as Body).detail, /both toolCalls and final/);

    decide = () => ({ final: 'x', usage: { inputTokens: -1 } });
    res = await post(service.url, TASK);
    assert.match((res.json() as Body).detail, /usage.inputTokens/);
  });

  test('bad requests get a clean 400/422 with a one-line reason, and decide never runs', async () => {
    const before = seen.length;
    const cases: [unknown, number, RegExp][] = [
      ['{not json', 400, /request body is not valid JSON/],
      ['[1, 2]', 422, /must be a JSON object.*got a list/],
      [{ tools: TOOLS }, 422, /^input: required/],
      [{ input: 3 }, 422, /^input: expected a string or a list/],
      [{ input: ['hi'] }, 422, /^input\[0\]: expected an object/],
      [{ input: 'x', tools: {} }, 422, /^tools: expected a list/],
    ];
    for (const [body, status, pattern] of cases) {
      const res = await post(service.url, body);
      assert.equal(res.status, status, String(body));
      const detail = (res.json() as Body).detail;
      assert.match(detail, pattern);
      assert.equal(detail.includes('\n'), false);
    }
    assert.equal(seen.length, before);
  });
});

test('createHandler mounts in a plain node:http server', async () => {
  const server = http.createServer(createHandler(() => ({ final: 'hello' }), { brainName: 'plain' }));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const body = (await post(url, TASK)).json() as Body;
    assert.equal(body.model, 'plain');
    assert.equal(body.output[0]!.content![0]!.text, 'hello');
  } finally {
    await closeServer(server);
  }
});

test('parseJsonDecision reads plain, fenced and wrapped JSON, and names a reply without a decision', () => {
  assert.deepEqual(parseJsonDecision('{"final": "6"}'), { final: '6' });
  assert.deepEqual(
    parseJsonDecision('```json\n{"tool_calls": [{"name": "get_counter_value", "arguments": {}}]}\n```'),
    {
      toolCalls: [{ name: 'get_counter_value', arguments: {} }],
    },
  );
  assert.deepEqual(parseJsonDecision('Sure! {"final": 6} Hope that helps.'), { final: '6' });
  assert.throws(
    () => parseJsonDecision('I think the answer is six'),
    /not a JSON decision: "I think the answer is six"/,
  );
  assert.throws(() => parseJsonDecision('{"thoughts": 1}'), /neither "tool_calls" nor "final"/);
});

test('renderConversation and toolHistory read a Gym conversation', () => {
  const conversation = [
    { role: 'user', content: 'add 1 then add 2 then get the count' },
    { type: 'function_call', call_id: 'c1', name: 'increment_counter', arguments: '{"count":1}' },
    { type: 'function_call_output', call_id: 'c1', output: '{"success":true}' },
    { type: 'function_call', call_id: 'c2', name: 'get_counter_value', arguments: '{}' },
    {
      type: 'message',
      role: 'assistant',
      id: 'm',
      content: [{ type: 'output_text', text: 'working', annotations: [] }],
    },
  ];
  assert.equal(
    renderConversation(conversation),
    [
      '[user] add 1 then add 2 then get the count',
      '[you asked for] increment_counter({"count":1})',
      '[tool result] {"success":true}',
      '[you asked for] get_counter_value({})',
      '[assistant] working',
    ].join('\n'),
  );
  assert.deepEqual(toolHistory(conversation), [
    { callId: 'c1', name: 'increment_counter', arguments: '{"count":1}', output: '{"success":true}' },
    { callId: 'c2', name: 'get_counter_value', arguments: '{}', output: undefined },
  ]);
});
