import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, beforeEach, describe, test } from 'node:test';
import { INCREMENT_COUNTER_TOOL } from '../../src/counter/tools.js';
import { request } from '../../src/http/client.js';
import { serve, type RunningService } from '../../src/service/index.js';
import { assertAgentCheckPasses, DIST_EXAMPLES, spawnService } from '../../test/support/examples.js';
import { startFakeModelServer, type RecordedItem } from '../../test/support/fake-model-server.js';
import { createOpenAiDecide, toChatMessages } from './brain.js';

const TASK = {
  input: [{ role: 'user', content: 'add 1 then add 2 then get the count' }],
  tools: [
    {
      type: 'function',
      name: 'increment_counter',
      description: 'Add to the counter',
      parameters: { type: 'object', properties: { count: { type: 'integer' } } },
      strict: true,
    },
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

  const withService = async (
    options: { api?: 'chat' | 'responses'; model?: string },
    body: (service: RunningService) => Promise<void>,
  ) => {
    const decide = createOpenAiDecide({
      modelUrl: model.url,
      model: options.model ?? 'fake-model',
      apiKey: 'sk-test',
      api: options.api ?? 'chat',
    });
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
    assert.deepEqual(first.body.tools![0], {
      type: 'function',
      function: { name: 'increment_counter', parameters: INCREMENT_COUNTER_TOOL.parameters },
    });
    const third = model.requests[2]!.body.messages!;
    assert.deepEqual(
      third.map((m) => m.role),
      ['user', 'assistant', 'tool', 'tool', 'assistant', 'tool'],
    );
    assert.deepEqual(
      third[1]!.tool_calls!.map((c) => [c.function.name, c.function.arguments]),
      [
        ['increment_counter', '{"count":1}'],
        ['increment_counter', '{"count":2}'],
      ],
    );
    assert.equal(third[2]!.tool_call_id, third[1]!.tool_calls![0]!.id);
    assert.equal(third[5]!.content, '{"count":6}');
  });

  test("chat API: the model's own usage is reported in the Responses usage", async () => {
    await withService({}, async (service) => {
      const res = await request(`${service.url}/v1/responses`, { method: 'POST', json: TASK, timeoutMs: 30_000 });
      assert.deepEqual((res.json() as Record<string, unknown>).usage, {
        input_tokens: 50,
        input_tokens_details: { cached_tokens: 20 },
        output_tokens: 10,
        output_tokens_details: { reasoning_tokens: 4 },
        total_tokens: 60,
      });
    });
  });

  test("responses API: passes gym agent check; items go to the model without this service's ids", async () => {
    await withService({ api: 'responses' }, async (service) => {
      await assertAgentCheckPasses(service.url);
    });
    assert.ok(model.requests.every((r) => r.path === '/v1/responses'));
    const later = model.requests[1]!.body.input as RecordedItem[];
    assert.deepEqual(
      later.map((item) => item.type ?? 'message'),
      ['message', 'function_call', 'function_call', 'function_call_output', 'function_call_output'],
    );
    assert.ok(later.every((item) => !('id' in item)));
    assert.equal(model.requests[0]!.body.tools![0]!.name, 'increment_counter');
  });

  test('a model server error answers HTTP 500 naming the status and the message', async () => {
    await withService({ model: 'needs-a-key' }, async (service) => {
      const res = await request(`${service.url}/v1/responses`, { method: 'POST', json: TASK, timeoutMs: 30_000 });
      assert.equal(res.status, 500);
      assert.match(
        (res.json() as { detail: string }).detail,
        /model server answered HTTP 401 .*Incorrect API key provided/,
      );
    });
  });

  test('runs with one command, the key read from the variable --api-key-env names', async () => {
    const service = await spawnService(
      process.execPath,
      [
        path.join(DIST_EXAMPLES, 'openai-compatible/service.js'),
        '--port',
        '0',
        '--model-url',
        model.url,
        '--model',
        'fake-model',
        '--api-key-env',
        'MY_MODEL_KEY',
      ],
      { env: { ...process.env, MY_MODEL_KEY: 'sk-from-env' } },
    );
    try {
      const res = await request(`${service.url}/v1/responses`, { method: 'POST', json: TASK, timeoutMs: 30_000 });
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
      {
        type: 'message',
        role: 'assistant',
        id: 'm',
        content: [{ type: 'output_text', text: 'On it.', annotations: [] }],
      },
      { type: 'function_call', call_id: 'c1', name: 'increment_counter', arguments: '{"count":1}' },
      { type: 'reasoning', id: 'r', summary: [] },
      { type: 'function_call_output', call_id: 'c1', output: '{"success":true}' },
    ]),
    [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'add 1' },
      {
        role: 'assistant',
        content: 'On it.',
        tool_calls: [{ id: 'c1', type: 'function', function: { name: 'increment_counter', arguments: '{"count":1}' } }],
      },
      { role: 'tool', tool_call_id: 'c1', content: '{"success":true}' },
    ],
  );
});
