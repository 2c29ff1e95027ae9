import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { after, before, beforeEach, describe, test } from 'node:test';
import { MODEL_BASE_URL_HEADER } from '../../src/contract/gym-wire.js';
import { validateResponse } from '../../src/contract/index.js';
import { COUNTER_TOOLS } from '../../src/counter/tools.js';
import { request } from '../../src/http/client.js';
import {
  chatAnswer,
  startCannedChatUpstream,
  type CannedChatUpstream,
} from '../../test/support/canned-chat-upstream.js';
import {
  assertAgentCheckPasses,
  REPO_ROOT,
  runCounterRollouts,
  spawnService,
  trajectoryTypes,
  type SpawnedService,
} from '../../test/support/examples.js';

const SCRIPT = path.join(REPO_ROOT, 'examples/python-stdlib/service.py');
const hasPython = spawnSync('python3', ['--version']).status === 0;

describe(
  'python-stdlib service (plain Python 3, standard library only)',
  { skip: hasPython ? false : 'python3 is not installed' },
  () => {
    let service: SpawnedService;
    before(async () => {
      service = await spawnService('python3', [SCRIPT, '--port', '0']);
    });
    after(() => service.close());

    test('scores 5/5 on the counter dataset through the remote agent, or else passes gym agent check', async (t) => {
      assert.match(service.output(), /counter-planner \(python stdlib, deterministic, no model\) listening on/);
      const results = await runCounterRollouts(service.url);
      if ('unavailable' in results) {
        t.diagnostic(`${results.unavailable}; checked with gym agent check instead`);
        await assertAgentCheckPasses(service.url);
        return;
      }
      assert.deepEqual(results.rewards, [1, 1, 1, 1, 1]);
      assert.equal(trajectoryTypes(results.rows[0]!).at(-1), 'message');
    });

    test('passes gym agent check', async () => {
      await assertAgentCheckPasses(service.url);
    });

    test('passes gym agent check with --incremental', async () => {
      const incremental = await spawnService('python3', [SCRIPT, '--port', '0', '--incremental']);
      try {
        await assertAgentCheckPasses(incremental.url);
      } finally {
        await incremental.close();
      }
    });

    test('bad requests get a 400/422 with a one-line reason', async () => {
      const cases: [string, number, RegExp][] = [
        ['{nope', 400, /request body is not valid JSON/],
        ['[1]', 422, /must be a JSON object/],
        ['{"tools": []}', 422, /^input: required/],
      ];
      for (const [body, status, pattern] of cases) {
        const res = await request(`${service.url}/v1/responses`, { method: 'POST', jsonText: body, timeoutMs: 30_000 });
        assert.equal(res.status, status, body);
        assert.match((res.json() as { detail: string }).detail, pattern);
      }
    });
  },
);

/** What these tests read of a Responses answer. */
interface Answer {
  model: string;
  output: { type: string; name?: string; arguments?: string; call_id?: string; content?: { text: string }[] }[];
  usage: Record<string, unknown>;
}

/** A step of a counter rollout: one ask already run, so the model sees every kind of item. */
const STEP = {
  instructions: 'Be brief.',
  input: [
    { role: 'user', content: 'add 1 then add 2 then get the count' },
    { type: 'function_call', call_id: 'c1', name: 'increment_counter', arguments: '{"count":1}' },
    { type: 'function_call_output', call_id: 'c1', output: '{"success":true}' },
  ],
  tools: COUNTER_TOOLS,
};

describe(
  'python-stdlib service with a model URL (x-gym-model-base-url, or --model-url)',
  { skip: hasPython ? false : 'python3 is not installed' },
  () => {
    let upstream: CannedChatUpstream;
    let service: SpawnedService;
    before(async () => {
      upstream = await startCannedChatUpstream();
      service = await spawnService('python3', [SCRIPT, '--port', '0']);
    });
    after(async () => {
      await service?.close();
      await upstream?.close();
    });
    beforeEach(() => {
      upstream.requests.length = 0;
    });

    const step = (modelUrl: string | null, body: unknown = STEP, url = service.url) =>
      request(`${url}/v1/responses`, {
        method: 'POST',
        json: body,
        headers: modelUrl === null ? {} : { [MODEL_BASE_URL_HEADER]: modelUrl },
        timeoutMs: 60_000,
      });

    test("the header's model gets the conversation as chat messages; its text and tool calls come back as items", async () => {
      upstream.answer = chatAnswer('Adding 2.', {
        toolCalls: [{ id: 'model-id', name: 'increment_counter', arguments: '{"count": 2}' }],
      });
      const res = await step(upstream.url);
      assert.equal(res.status, 200, res.text());

      assert.equal(upstream.requests.length, 1);
      const sent = upstream.requests[0]!;
      assert.equal(sent.path, '/v1/chat/completions');
      assert.equal(sent.headers.authorization, undefined);
      assert.deepEqual(sent.body, {
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'add 1 then add 2 then get the count' },
          {
            role: 'assistant',
            content: null,
            tool_calls: [
              { id: 'c1', type: 'function', function: { name: 'increment_counter', arguments: '{"count":1}' } },
            ],
          },
          { role: 'tool', tool_call_id: 'c1', content: '{"success":true}' },
        ],
        tools: COUNTER_TOOLS.map((tool) => ({
          type: 'function',
          function: { name: tool.name, parameters: tool.parameters },
        })),
      });

      const answer = res.json() as Answer;
      const valid = validateResponse(answer);
      assert.ok(valid.ok, valid.ok ? '' : valid.message);
      assert.equal(answer.model, 'canned');
      assert.deepEqual(
        answer.output.map((item) => [item.type, item.name ?? item.content?.[0]?.text, item.arguments]),
        [
          ['message', 'Adding 2.', undefined],
          ['function_call', 'increment_counter', '{"count": 2}'],
        ],
      );
      assert.notEqual(answer.output[1]!.call_id, 'model-id');
      assert.deepEqual(answer.usage, {
        input_tokens: 120,
        input_tokens_details: { cached_tokens: 0 },
        output_tokens: 9,
        output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: 129,
      });
    });

    test('a model that answers HTTP 500 gets a 502 naming the status and its message; the service keeps serving', async () => {
      upstream.answer = { status: 500, body: { error: { message: 'the GPU caught fire' } } };
      const res = await step(upstream.url);
      assert.equal(res.status, 502, res.text());
      assert.match(
        (res.json() as { detail: string }).detail,
        /^the model answered HTTP 500 at http:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions: .*the GPU caught fire/,
      );
      assert.equal(upstream.requests.length, 1);
      // Without the header, the built-in planner answers as before.
      const planned = await step(null);
      assert.equal(planned.status, 200, planned.text());
      assert.equal((planned.json() as Answer).model, 'counter-planner (python stdlib, deterministic, no model)');
      assert.equal(upstream.requests.length, 1);
    });

    test('an unreachable model, or an answer that is not a chat completion, gets a 502 too', async () => {
      const unreachable = await step('http://127.0.0.1:1/v1');
      assert.equal(unreachable.status, 502, unreachable.text());
      assert.match(
        (unreachable.json() as { detail: string }).detail,
        /^the model call to http:\/\/127\.0\.0\.1:1\/v1\/chat\/completions failed \(\w+\)/,
      );
      const answers: [typeof upstream.answer, RegExp][] = [
        [{ status: 200, body: 'not json' }, /answer at http:\S+ is not JSON: not json/],
        [{ status: 200, body: { choices: [] } }, /has no choices\[0\]\.message/],
        [
          chatAnswer(null, { toolCalls: [{ id: 'x', name: 'rm_rf', arguments: '{}' }] }),
          /asked for tool 'rm_rf', which this request did not declare/,
        ],
      ];
      for (const [answer, pattern] of answers) {
        upstream.answer = answer;
        const res = await step(upstream.url);
        assert.equal(res.status, 502, res.text());
        assert.match((res.json() as { detail: string }).detail, pattern);
      }
    });

    test('--model-url answers calls without the header, with --model and the key from OPENAI_API_KEY', async () => {
      const own = await spawnService('python3', [SCRIPT, '--port', '0', '--model-url', upstream.url, '--model', 'm1'], {
        env: { ...process.env, OPENAI_API_KEY: 'sk-own' },
      });
      try {
        assert.match(own.output(), /^python stdlib service \(model at http:\S+\) listening on/m);
        upstream.answer = chatAnswer('3');
        const res = await step(null, STEP, own.url);
        assert.equal(res.status, 200, res.text());
        assert.equal(upstream.requests[0]!.headers.authorization, 'Bearer sk-own');
        assert.equal(upstream.requests[0]!.body.model, 'm1');
        assert.deepEqual(
          (res.json() as Answer).output.map((item) => [item.type, item.content?.[0]?.text]),
          [['message', '3']],
        );
        // Gym's URL still wins, and is sent no key: the model server holds the upstream's key itself.
        upstream.requests.length = 0;
        const viaGym = await step(upstream.url, STEP, own.url);
        assert.equal(viaGym.status, 200, viaGym.text());
        assert.equal(upstream.requests[0]!.headers.authorization, undefined);
      } finally {
        await own.close();
      }
    });
  },
);
