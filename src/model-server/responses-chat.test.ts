/**
 * vllm_model's Responses-to-chat translation over real HTTP on loopback: a `/v1/responses` call reaches a scripted
 * vLLM (test/support/vllm-upstream.ts) as a chat completion, and its answer, whole or streamed, comes back as a valid
 * Responses object or the Responses events; with token-id capture the record holds vLLM's ids and keeps
 * `dialect: 'responses'`; a tool call goes round; an upstream error is relayed; a body with no chat form is refused.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { validateResponse } from '../contract/validate.js';
import { request } from '../http/client.js';
import {
  EOS,
  ids,
  logProbOf,
  promptIds,
  startVllmUpstream,
  TOOL_ARGUMENTS,
  type VllmUpstream,
} from '../../test/support/vllm-upstream.js';
import { startTestModelServer, type TestModelServer } from '../../test/support/model-server.js';
import type { ModelCallCapture } from './records.js';

let upstream: VllmUpstream;
let base: string;
let model: TestModelServer;

before(async () => {
  upstream = await startVllmUpstream();
  model = await startTestModelServer({ upstreamUrl: upstream.url, tokenIdShape: 'vllm', translateResponses: true });
  base = model.url;
});

after(async () => {
  await model.close();
  await upstream.close();
});

async function post(url: string, body: unknown): Promise<{ status: number; text: string }> {
  const res = await request(url, { method: 'POST', json: body, timeoutMs: 60_000 });
  return { status: res.status, text: res.text() };
}

/** One call under an open rollout (captured or not), and the rollout's record of it. */
async function recordedCall(
  id: string,
  body: Record<string, unknown>,
  capture: boolean,
): Promise<{ status: number; text: string; capture: ModelCallCapture }> {
  assert.equal((await post(`${base}/ng-rollout/${id}/open`, {})).status, 200);
  const prefix = capture ? '/training-token-capture' : '';
  const answer = await post(`${base}/ng-rollout/${id}${prefix}/v1/responses`, body);
  const closed = await post(`${base}/ng-rollout/${id}/close`, {});
  return { ...answer, capture: JSON.parse(closed.text) as ModelCallCapture };
}

interface SseEvent {
  event: string;
  data: Record<string, unknown>;
}

function events(text: string): SseEvent[] {
  return text
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => {
      const lines = block.split('\n');
      const event = lines.find((l) => l.startsWith('event: '))?.slice(7) ?? '';
      const data = lines.find((l) => l.startsWith('data: '))?.slice(6) ?? '{}';
      return { event, data: JSON.parse(data) as Record<string, unknown> };
    });
}

function validResponse(value: unknown): Record<string, unknown> {
  const checked = validateResponse(value);
  assert.ok(checked.ok, checked.ok ? '' : `not a valid Responses object: ${checked.message}`);
  return value as Record<string, unknown>;
}

function lastChatRequest(): Record<string, unknown> {
  const sent = upstream.requests.filter((r) => r.path === '/v1/chat/completions').at(-1);
  assert.ok(sent, 'the upstream received no chat completion');
  return sent.body;
}

const messages = [
  { role: 'system', content: 'be brief' },
  { role: 'user', content: 'count to 3' },
];
const text = 'reply to: count to 3';
const generation = [...ids(text), EOS];
const usage = {
  input_tokens: promptIds(messages).length,
  input_tokens_details: { cached_tokens: 0 },
  output_tokens: generation.length,
  output_tokens_details: { reasoning_tokens: 0 },
  total_tokens: promptIds(messages).length + generation.length,
};

describe('vllm_model: /v1/responses as chat completions', () => {
  it('sends the call as a chat completion and answers a Responses object with the settings echoed', async () => {
    const body = {
      model: 'agent-name',
      instructions: 'be brief',
      input: [{ role: 'user', content: [{ type: 'input_text', text: 'count to 3' }] }],
      max_output_tokens: 50,
      temperature: 0.5,
      top_p: 0.9,
      text: { format: { type: 'json_schema', name: 'count', schema: { type: 'object' }, strict: true } },
    };
    const { status, text: raw } = await post(`${base}/v1/responses`, body);
    assert.equal(status, 200, raw);
    const sent = lastChatRequest();
    assert.deepEqual(sent.messages, messages);
    assert.equal(sent.model, 'served');
    assert.equal(sent.max_tokens, 50);
    assert.equal(sent.max_output_tokens, undefined);
    assert.deepEqual([sent.temperature, sent.top_p, sent.stream], [0.5, 0.9, undefined]);
    assert.deepEqual(sent.response_format, {
      type: 'json_schema',
      json_schema: { name: 'count', schema: { type: 'object' }, strict: true },
    });
    const response = validResponse(JSON.parse(raw));
    assert.match(String(response.id), /^resp_/);
    assert.deepEqual([response.object, response.status, response.model], ['response', 'completed', 'served']);
    assert.deepEqual([response.temperature, response.top_p, response.max_output_tokens], [0.5, 0.9, 50]);
    assert.deepEqual([response.instructions, response.text], [body.instructions, body.text]);
    assert.deepEqual(response.usage, usage);
    const output = response.output as Record<string, unknown>[];
    assert.equal(output.length, 1);
    assert.deepEqual(output[0]!.content, [{ type: 'output_text', text, annotations: [] }]);
    assert.deepEqual([output[0]!.type, output[0]!.role, output[0]!.status], ['message', 'assistant', 'completed']);
  });

  it("turns vLLM's reasoning_content into a reasoning item before the message", async () => {
    const { status, text: raw } = await post(`${base}/v1/responses`, { input: 'THINK first' });
    assert.equal(status, 200, raw);
    const output = validResponse(JSON.parse(raw)).output as Record<string, unknown>[];
    assert.deepEqual(
      output.map((item) => item.type),
      ['reasoning', 'message'],
    );
    assert.deepEqual(output[0]!.summary, [{ type: 'summary_text', text: 'thinking it over' }]);
  });

  it('records a captured call with its ids, as a responses call', async () => {
    const body = { instructions: 'be brief', input: 'count to 3' };
    const { status, text: raw, capture } = await recordedCall('whole', body, true);
    assert.equal(status, 200, raw);
    const sent = lastChatRequest();
    assert.deepEqual(
      [sent.logprobs, sent.top_logprobs, sent.return_tokens_as_token_ids, sent.return_token_ids],
      [true, 0, true, true],
    );
    const response = validResponse(JSON.parse(raw));
    const call = capture.calls[0]!;
    assert.equal(call.error_category, null, JSON.stringify(call));
    assert.deepEqual([call.dialect, call.response_id, call.response_status], ['responses', response.id, 'completed']);
    assert.deepEqual(call.prompt_token_ids, promptIds(messages));
    assert.deepEqual(call.generation_token_ids, generation);
    assert.deepEqual(
      call.generation_log_probs,
      generation.map((id, i) => logProbOf(id, i)),
    );
    assert.deepEqual([call.tokens_in, call.tokens_out], [usage.input_tokens, usage.output_tokens]);
  });

  it('streams a call as the Responses events, the whole response with its usage last', async () => {
    const body = { instructions: 'be brief', input: 'count to 3', stream: true };
    const { status, text: raw, capture } = await recordedCall('streamed', body, false);
    assert.equal(status, 200, raw);
    const sent = lastChatRequest();
    assert.deepEqual([sent.stream, sent.stream_options], [true, { include_usage: true }]);
    const got = events(raw);
    assert.ok(
      got.every((e) => e.event === e.data.type),
      'each event names its type',
    );
    assert.deepEqual(
      got.map((e) => e.data.sequence_number),
      got.map((_, i) => i),
    );
    const types = got.map((e) => e.event);
    assert.deepEqual(
      [types[0], types[1], types[2], types.at(-1)],
      ['response.created', 'response.output_item.added', 'response.content_part.added', 'response.completed'],
    );
    const deltas = got.filter((e) => e.event === 'response.output_text.delta').map((e) => e.data.delta);
    assert.deepEqual(deltas, [text.slice(0, 5), text.slice(5)]);
    validResponse(got[0]!.data.response);
    const response = validResponse(got.at(-1)!.data.response);
    assert.deepEqual(response.usage, usage);
    const output = response.output as Record<string, unknown>[];
    assert.deepEqual(output[0]!.content, [{ type: 'output_text', text, annotations: [] }]);
    const call = capture.calls[0]!;
    assert.deepEqual([call.dialect, call.error_category, call.response_id], ['responses', null, response.id]);
    assert.equal(call.tokens_out, usage.output_tokens);
    assert.equal(call.token_id_capture, undefined);
  });

  it('captures the ids of a streamed call', async () => {
    const body = { instructions: 'be brief', input: 'count to 3', stream: true };
    const { status, text: raw, capture } = await recordedCall('streamed-capture', body, true);
    assert.equal(status, 200, raw);
    assert.equal(events(raw).at(-1)!.event, 'response.completed');
    const call = capture.calls[0]!;
    assert.equal(call.error_category, null, JSON.stringify(call));
    assert.equal(call.dialect, 'responses');
    assert.deepEqual(call.prompt_token_ids, promptIds(messages));
    assert.deepEqual(call.generation_token_ids, generation);
  });

  it('goes round a tool call: the call as a function_call item, its output back as a tool message', async () => {
    const tools = [{ type: 'function', name: 'increment', description: 'add', parameters: { type: 'object' } }];
    const first = await post(`${base}/v1/responses`, { input: 'use the TOOL', tools, tool_choice: 'auto' });
    assert.equal(first.status, 200, first.text);
    assert.deepEqual(lastChatRequest().tools, [
      { type: 'function', function: { name: 'increment', description: 'add', parameters: { type: 'object' } } },
    ]);
    assert.equal(lastChatRequest().tool_choice, 'auto');
    const response = validResponse(JSON.parse(first.text));
    assert.deepEqual(response.tools, tools);
    const output = response.output as Record<string, unknown>[];
    assert.deepEqual(
      output.map((item) => item.type),
      ['function_call'],
    );
    assert.deepEqual(
      [output[0]!.call_id, output[0]!.name, output[0]!.arguments],
      ['call_1', 'increment', TOOL_ARGUMENTS],
    );
    const input = [
      { role: 'user', content: 'use the TOOL' },
      ...output,
      { type: 'function_call_output', call_id: 'call_1', output: '{"value":1}' },
    ];
    const second = await post(`${base}/v1/responses`, { input, tools });
    assert.equal(second.status, 200, second.text);
    assert.deepEqual(lastChatRequest().messages, [
      { role: 'user', content: 'use the TOOL' },
      {
        role: 'assistant',
        content: '',
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'increment', arguments: TOOL_ARGUMENTS } }],
      },
      { role: 'tool', tool_call_id: 'call_1', content: '{"value":1}' },
    ]);
    validResponse(JSON.parse(second.text));
  });

  it('streams a tool call as a function_call item with its argument deltas', async () => {
    const tools = [{ type: 'function', name: 'increment', parameters: { type: 'object' } }];
    const { status, text: raw } = await post(`${base}/v1/responses`, { input: 'TOOL', tools, stream: true });
    assert.equal(status, 200, raw);
    const got = events(raw);
    const args = got.filter((e) => e.event === 'response.function_call_arguments.delta').map((e) => e.data.delta);
    assert.equal(args.join(''), TOOL_ARGUMENTS);
    const response = validResponse(got.at(-1)!.data.response);
    const output = response.output as Record<string, unknown>[];
    assert.deepEqual(
      output.map((item) => [item.type, item.call_id, item.name, item.arguments]),
      [['function_call', 'call_1', 'increment', TOOL_ARGUMENTS]],
    );
  });

  it("relays the upstream's error, whole and streamed, and records it", async () => {
    for (const stream of [false, true]) {
      const { status, text: raw, capture } = await recordedCall(`fail-${stream}`, { input: 'FAIL', stream }, false);
      assert.equal(status, 400, raw);
      assert.match(raw, /FAIL asked for/);
      assert.equal(capture.calls[0]!.error_category, 'upstream_http_error');
      assert.equal(capture.calls[0]!.dialect, 'responses');
    }
  });

  it('ends a cut stream with an error event, never response.completed', async () => {
    const { status, text: raw, capture } = await recordedCall('cut', { input: 'CUT', stream: true }, false);
    assert.equal(status, 200);
    const got = events(raw);
    assert.equal(got.at(-1)!.event, 'error', raw);
    assert.ok(!got.some((e) => e.event === 'response.completed'));
    assert.equal(capture.calls[0]!.error_category, 'upstream_stream_cut');
  });

  it('refuses an input item with no chat form, naming it, before calling the upstream', async () => {
    const before = upstream.requests.length;
    const { status, text: raw } = await post(`${base}/v1/responses`, {
      input: [{ type: 'web_search_call', id: 'ws_1', status: 'completed' }],
    });
    assert.equal(status, 400);
    const { detail } = JSON.parse(raw) as { detail: string };
    assert.match(detail, /input\[0\]\.type "web_search_call" has no chat completions form/);
    assert.equal(upstream.requests.length, before);
  });
});

describe("vllm_model with return_token_id_information: the ids on the answer, as the reference's", () => {
  let bundled: TestModelServer;

  before(async () => {
    bundled = await startTestModelServer({
      upstreamUrl: upstream.url,
      tokenIdShape: 'vllm',
      translateResponses: true,
      tokensOnAnswer: true,
    });
  });

  after(() => bundled.close());

  it('puts them on the chat message and drops the transport fields', async () => {
    const messages = [{ role: 'user', content: 'hello there' }];
    const res = await post(`${bundled.url}/v1/chat/completions`, { model: 'x', messages });
    assert.equal(res.status, 200, res.text);
    const answer = JSON.parse(res.text) as Record<string, unknown> & {
      choices: (Record<string, unknown> & { message: Record<string, unknown> })[];
    };
    const generated = [...ids(`reply to: hello there`), EOS];
    assert.deepEqual(answer.choices[0]!.message.prompt_token_ids, promptIds(messages));
    assert.deepEqual(answer.choices[0]!.message.generation_token_ids, generated);
    assert.deepEqual(
      answer.choices[0]!.message.generation_log_probs,
      generated.map((id, i) => logProbOf(id, i)),
    );
    assert.equal(answer.choices[0]!.message.content, 'reply to: hello there');
    assert.equal(answer.prompt_token_ids, undefined);
    assert.equal(answer.choices[0]!.logprobs, undefined);
    assert.equal(answer.choices[0]!.token_ids, undefined);
  });

  it("puts them on a translated answer's last output item", async () => {
    const res = await post(`${bundled.url}/v1/responses`, { model: 'x', input: 'hello there' });
    assert.equal(res.status, 200, res.text);
    const response = JSON.parse(res.text) as { output: Record<string, unknown>[] };
    const last = response.output.at(-1)!;
    assert.deepEqual(last.prompt_token_ids, promptIds([{ role: 'user', content: 'hello there' }]));
    assert.deepEqual(last.generation_token_ids, [...ids('reply to: hello there'), EOS]);
    assert.equal((last.generation_log_probs as number[]).length, last.generation_token_ids.length);
  });
});
