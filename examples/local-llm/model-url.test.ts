/**
 * The local brain's second way: a call that carries the rollout's model URL (`x-gym-model-base-url`) is sent to
 * that URL's /chat/completions as the same chat turns, with the reply schema as `response_format`. The counter
 * service runs with `--brain local` in a real process, without a model file (so no node-llama-cpp is needed), and
 * a canned OpenAI-compatible upstream on loopback answers. One test gives it a model file too, to show the URL wins.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, beforeEach, describe, test } from 'node:test';
import { MODEL_BASE_URL_HEADER } from '../../src/contract/gym-wire.js';
import { validateResponse } from '../../src/contract/index.js';
import { COUNTER_TOOLS } from '../../src/counter/tools.js';
import { request } from '../../src/http/client.js';
import type { FunctionTool } from '../../src/service/index.js';
import { tempDir } from '../../test/support/cli.js';
import {
  chatAnswer,
  startCannedChatUpstream,
  type CannedChatUpstream,
} from '../../test/support/canned-chat-upstream.js';
import { DIST_EXAMPLES, spawnService, type SpawnedService } from '../../test/support/examples.js';
import { NO_MODEL_MESSAGE } from './brain.js';
import { writeTinyGguf } from './tiny-gguf.js';
import { replySchema, systemPrompt } from './tool-protocol.js';

const SERVICE = `${DIST_EXAMPLES}counter-planner/service.js`;
const TOOLS = COUNTER_TOOLS as FunctionTool[];

/** What the test reads of a Responses answer. */
interface Answer {
  model: string;
  output: { type: string; name?: string; arguments?: string; content?: { text: string }[] }[];
  usage: { input_tokens: number; output_tokens: number; total_tokens: number };
}

const runtimeMissing = ((): string | undefined => {
  try {
    import.meta.resolve('node-llama-cpp');
    return undefined;
  } catch {
    return 'node-llama-cpp is not installed';
  }
})();

describe('the local brain with a model URL per call (no model file)', () => {
  let upstream: CannedChatUpstream;
  let service: SpawnedService;
  before(async () => {
    upstream = await startCannedChatUpstream();
    service = await spawnService(process.execPath, [SERVICE, '--brain', 'local', '--port', '0']);
  });
  after(async () => {
    await service?.close();
    await upstream?.close();
  });
  beforeEach(() => {
    upstream.requests.length = 0;
  });

  /** One service call; `withModelUrl: false` leaves Gym's model URL header out. */
  const call = (input: unknown[], withModelUrl = true) =>
    request(`${service.url}/v1/responses`, {
      method: 'POST',
      json: { input, tools: COUNTER_TOOLS, instructions: 'Be brief.' },
      headers: withModelUrl ? { [MODEL_BASE_URL_HEADER]: upstream.url } : {},
      timeoutMs: 60_000,
    });

  test('starts without --model, saying in its start line that each call needs a model URL', () => {
    assert.match(service.output(), /^local \(no model file: needs each call's model URL from Gym\) listening on/m);
  });

  test('sends the chat turns and the reply schema to <url>/chat/completions and answers with the parsed tool call', async () => {
    upstream.answer = chatAnswer('{"tool": "increment_counter", "arguments": {"count": 1 }}');
    const res = await call([{ role: 'user', content: 'add 1 then get the count' }]);
    assert.equal(res.status, 200, res.text());

    assert.equal(upstream.requests.length, 1);
    const sent = upstream.requests[0]!;
    assert.equal(sent.path, '/v1/chat/completions');
    assert.deepEqual(sent.body, {
      messages: [
        { role: 'system', content: systemPrompt(TOOLS, 'Be brief.') },
        { role: 'user', content: 'add 1 then get the count' },
      ],
      response_format: { type: 'json_schema', json_schema: { name: 'reply', schema: replySchema(TOOLS) } },
      max_tokens: 512,
      temperature: 0,
      stream: false,
    });

    const answer = res.json() as Answer;
    const valid = validateResponse(answer);
    assert.ok(valid.ok, valid.ok ? '' : valid.message);
    assert.deepEqual(
      answer.output.map((item) => [item.type, item.name, item.arguments, item.content?.[0]?.text]),
      [
        // The reply as the model wrote it (what captured tokens decode to), then the call read out of it.
        ['message', undefined, undefined, '{"tool": "increment_counter", "arguments": {"count": 1 }}'],
        ['function_call', 'increment_counter', '{"count": 1 }', undefined],
      ],
    );
    assert.deepEqual([answer.usage.input_tokens, answer.usage.output_tokens, answer.usage.total_tokens], [120, 9, 129]);
  });

  test('later calls replay the earlier calls and results as turns; a final reply ends with a message', async () => {
    upstream.answer = chatAnswer('{"final": "1"}');
    const res = await call([
      { role: 'user', content: 'add 1 then get the count' },
      { type: 'function_call', call_id: 'a', name: 'increment_counter', arguments: '{"count":1}' },
      { type: 'function_call_output', call_id: 'a', output: '{"success":true}' },
    ]);
    assert.equal(res.status, 200, res.text());
    assert.deepEqual((upstream.requests[0]!.body.messages as unknown[]).slice(1), [
      { role: 'user', content: 'add 1 then get the count' },
      { role: 'assistant', content: '{"tool": "increment_counter", "arguments": {"count":1}}' },
      { role: 'user', content: 'Result of increment_counter: {"success":true}' },
    ]);
    const answer = res.json() as Answer;
    assert.deepEqual(
      answer.output.map((item) => [item.type, item.content![0]!.text]),
      [
        ['message', '{"final": "1"}'],
        ['message', '1'],
      ],
    );
  });

  test('a reply shown as it came is replayed once: the calls read out of it are not written again', async () => {
    upstream.answer = chatAnswer('{"final": "1"}');
    const reply = '{"tool": "increment_counter", "arguments": {"count":1} }';
    const res = await call([
      { role: 'user', content: 'add 1 then get the count' },
      { role: 'assistant', content: reply },
      { type: 'function_call', call_id: 'a', name: 'increment_counter', arguments: '{"count":1}' },
      { type: 'function_call_output', call_id: 'a', output: '{"success":true}' },
    ]);
    assert.equal(res.status, 200, res.text());
    assert.deepEqual((upstream.requests[0]!.body.messages as unknown[]).slice(1), [
      { role: 'user', content: 'add 1 then get the count' },
      { role: 'assistant', content: reply },
      { role: 'user', content: 'Result of increment_counter: {"success":true}' },
    ]);
  });

  test('a call without a model URL fails with HTTP 500 saying there is no model and no URL', async () => {
    const res = await call([{ role: 'user', content: 'add 1' }], false);
    assert.equal(res.status, 500, res.text());
    const { detail } = res.json() as { detail: string };
    assert.ok(detail.includes(NO_MODEL_MESSAGE), detail);
    assert.match(detail, /: no model for this call: the service was started without --model FILE\.gguf/);
    assert.equal(upstream.requests.length, 0);
  });

  test("the model's failures answer HTTP 500 naming what went wrong, and the service keeps serving", async () => {
    const cases: [ReturnType<typeof chatAnswer>, RegExp][] = [
      [
        { status: 503, body: { error: { message: 'model is loading' } } },
        /model server answered HTTP 503 at http:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions: .*model is loading/,
      ],
      [
        chatAnswer('Sure! I will add one.'),
        /answered text that is not JSON \(does it honour response_format json_schema\?\)/,
      ],
      [
        chatAnswer('{"final": "and so', { finishReason: 'length' }),
        /the model at http:\S+'s reply was cut off at the token limit \(512 tokens\).*raise --max-tokens/,
      ],
      [chatAnswer('{"tool": "rm_rf"}'), /the model at http:\S+ answered outside its grammar/],
      [{ status: 200, body: 'not json' }, /the answer from http:\S+ is not JSON: not json/],
      [{ status: 200, body: { choices: [] } }, /has no choices\[0\]\.message\.content text/],
    ];
    for (const [answer, pattern] of cases) {
      upstream.answer = answer;
      const res = await call([{ role: 'user', content: 'add 1' }]);
      assert.equal(res.status, 500, res.text());
      assert.match((res.json() as { detail: string }).detail, pattern);
    }
    upstream.answer = chatAnswer('{"final": "still here"}');
    assert.equal((await call([{ role: 'user', content: 'add 1' }])).status, 200);
  });
});

test('with a model file too, a call that carries a model URL goes to the URL, not the in-process model', async (t) => {
  if (runtimeMissing) return t.skip(runtimeMissing);
  const file = path.join(tempDir('tsgym-local-llm-'), 'tiny.gguf');
  writeTinyGguf(file, { favour: '"ti' });
  const upstream = await startCannedChatUpstream();
  t.after(() => upstream.close());
  const service = await spawnService(
    process.execPath,
    [SERVICE, '--brain', 'local', '--model', file, '--port', '0', '--threads', '1'],
    { timeoutMs: 300_000 },
  );
  t.after(() => service.close());
  upstream.answer = chatAnswer('{"final": "from the URL"}');
  const res = await request(`${service.url}/v1/responses`, {
    method: 'POST',
    json: { input: 'add 1', tools: COUNTER_TOOLS },
    headers: { [MODEL_BASE_URL_HEADER]: upstream.url },
    timeoutMs: 60_000,
  });
  assert.equal(res.status, 200, res.text());
  const answer = res.json() as Answer;
  assert.equal(answer.model, 'local (tiny.gguf)');
  assert.equal(answer.output.at(-1)!.content![0]!.text, 'from the URL');
  assert.equal(upstream.requests.length, 1);
});
