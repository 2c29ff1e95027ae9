/**
 * Token-id capture in the model server, over real HTTP: a call under `/ng-rollout/<id>/training-token-capture/v1/…`
 * asks a scripted vLLM (test/support/vllm-upstream.ts, vLLM's documented shapes) for ids and log-probs and records
 * exactly what it answered, whole or streamed; an upstream or call that cannot give ids fails with the one class
 * `token_id_capture_unsupported`, naming the setting; a cut stream and a rollout over its token cap lose their ids
 * visibly.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { request } from '../http/client.js';
import {
  EOS,
  ids,
  logProbOf,
  promptIds,
  startVllmUpstream,
  type VllmUpstream,
} from '../../test/support/vllm-upstream.js';
import { startTestModelServer, type TestModelServer } from '../../test/support/model-server.js';
import type { ModelCallCapture } from './records.js';
import {
  answerTokens,
  TokenIdCaptureUnsupported,
  TokenIdsMalformed,
  TokenIdSource,
  type TokenIdShape,
} from './token-ids.js';

let upstream: VllmUpstream;
const servers: TestModelServer[] = [];

before(async () => {
  upstream = await startVllmUpstream();
});

after(async () => {
  for (const server of servers) await server.close();
  await upstream.close();
});

async function modelServer(shape: TokenIdShape | undefined, maxTokens?: number): Promise<string> {
  const server = await startTestModelServer({
    upstreamUrl: upstream.url,
    tokenIdShape: shape,
    limits: {
      maxOpen: 100,
      maxCallsPerRollout: 100,
      idleMs: 600_000,
      ...(maxTokens ? { maxCapturedTokensPerRollout: maxTokens } : {}),
    },
  });
  servers.push(server);
  return server.url;
}

async function post(url: string, body: unknown): Promise<{ status: number; text: string }> {
  const res = await request(url, { method: 'POST', json: body, timeoutMs: 60_000 });
  return { status: res.status, text: res.text() };
}

const messages = [
  { role: 'system', content: 'be brief' },
  { role: 'user', content: 'count to 3' },
];
const expectedGeneration = [...ids('reply to: count to 3'), EOS];

async function capturedCall(
  base: string,
  id: string,
  body: Record<string, unknown>,
  path = '/chat/completions',
): Promise<{ status: number; text: string; capture: ModelCallCapture }> {
  assert.equal((await post(`${base}/ng-rollout/${id}/open`, {})).status, 200);
  const answer = await post(`${base}/ng-rollout/${id}/training-token-capture/v1${path}`, body);
  const closed = await post(`${base}/ng-rollout/${id}/close`, {});
  return { ...answer, capture: JSON.parse(closed.text) as ModelCallCapture };
}

describe('token-id capture (vLLM shape)', () => {
  it('asks vLLM for ids and log-probs and records exactly what it answered', async () => {
    const base = await modelServer('vllm');
    const { status, capture } = await capturedCall(base, 'whole', { model: 'x', messages });
    assert.equal(status, 200);
    const asked = upstream.requests.at(-1)!.body;
    assert.deepEqual(
      [asked.logprobs, asked.top_logprobs, asked.return_tokens_as_token_ids, asked.return_token_ids],
      [true, 0, true, true],
    );
    const call = capture.calls[0]!;
    assert.equal(call.error_category, null, JSON.stringify(call));
    assert.equal(call.token_id_capture, true);
    assert.deepEqual(call.prompt_token_ids, promptIds(messages));
    assert.deepEqual(call.generation_token_ids, expectedGeneration);
    assert.deepEqual(
      call.generation_log_probs,
      expectedGeneration.map((id, i) => logProbOf(id, i)),
    );
    assert.deepEqual(call.output_items, [
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'reply to: count to 3' }] },
    ]);
  });

  it('gathers the same ids from a streamed answer', async () => {
    const base = await modelServer('vllm');
    const { status, text, capture } = await capturedCall(base, 'streamed', { model: 'x', messages, stream: true });
    assert.equal(status, 200);
    assert.match(text, /data: \[DONE\]/);
    const call = capture.calls[0]!;
    assert.equal(call.error_category, null, JSON.stringify(call));
    assert.deepEqual(call.prompt_token_ids, promptIds(messages));
    assert.deepEqual(call.generation_token_ids, expectedGeneration);
    assert.deepEqual(
      call.generation_log_probs,
      expectedGeneration.map((id, i) => logProbOf(id, i)),
    );
    assert.equal((call.output_items![0]!.content as { text: string }[])[0]!.text, 'reply to: count to 3');
  });

  it('a stream cut mid-way records the failure and no ids', async () => {
    const base = await modelServer('vllm');
    const cut = [{ role: 'user', content: 'please CUT' }];
    const { capture } = await capturedCall(base, 'cut', { model: 'x', messages: cut, stream: true });
    const call = capture.calls[0]!;
    assert.equal(call.error_category, 'upstream_stream_cut', JSON.stringify(call));
    assert.equal(call.generation_token_ids, undefined);
  });

  it('past max_captured_tokens_per_rollout the ids are dropped and the rollout carries a gap', async () => {
    const base = await modelServer('vllm', 30);
    const { status, capture } = await capturedCall(base, 'capped', { model: 'x', messages });
    assert.equal(status, 200);
    assert.equal(capture.calls[0]!.prompt_token_ids, undefined);
    assert.deepEqual(
      capture.gaps?.map((g) => g.code),
      ['token_id_capture_over_cap'],
    );
  });
});

describe('token-id capture refused', () => {
  const cases: [string, TokenIdShape | undefined, Record<string, unknown>, string, RegExp][] = [
    [
      'an upstream with no token ids at all',
      undefined,
      { model: 'x', messages },
      '/chat/completions',
      /token_id_capture is on for this rollout, but the model server 'policy_model' cannot get token ids/,
    ],
    [
      'a /v1/responses call',
      'vllm',
      { model: 'x', input: 'hi' },
      '/responses',
      /a \/v1\/responses call carries no token ids/,
    ],
    ['n > 1', 'vllm', { model: 'x', messages, n: 2 }, '/chat/completions', /needs n=1/],
    [
      'log-probs without ids (llama-server reading, an upstream that gives none)',
      'llama_server',
      { model: 'x', messages },
      '/chat/completions',
      /answers log-probs without token ids/,
    ],
  ];
  for (const [what, shape, body, path, message] of cases) {
    it(`${what}: the call fails with token_id_capture_unsupported, naming the setting`, async () => {
      const base = await modelServer(shape);
      const { status, text, capture } = await capturedCall(base, 'refused', body, path);
      assert.equal(status, 400, text);
      const error = (JSON.parse(text) as { error: { type: string; message: string } }).error;
      assert.equal(error.type, 'token_id_capture_unsupported');
      assert.match(error.message, message);
      assert.equal(capture.calls[0]!.error_category, 'token_id_capture_unsupported');
      assert.equal(capture.calls[0]!.token_id_capture, true);
    });
  }
});

describe('TokenIdSource reading', () => {
  const never = new AbortController().signal;

  it('llama-server: generated ids from logprobs.content[i].id, prompt ids via /apply-template then /tokenize', async () => {
    const posted: [string, Record<string, unknown>][] = [];
    const source = new TokenIdSource('llama_server', (path, body) => {
      posted.push([path, body]);
      return Promise.resolve(path === '/apply-template' ? { prompt: '<s>user: hi' } : { tokens: [1, 2, 3] });
    });
    const sent = source.askFor({ model: 'x', messages: [{ role: 'user', content: 'hi' }] }, 'chat');
    assert.deepEqual([sent.logprobs, sent.top_logprobs, sent.return_token_ids], [true, 0, undefined]);
    const answer = {
      choices: [
        {
          message: { role: 'assistant', content: 'ok' },
          logprobs: {
            content: [
              { id: 40, token: 'o', bytes: [111], logprob: -0.5, top_logprobs: [] },
              { id: 41, token: 'k', bytes: [107], logprob: -1.25, top_logprobs: [] },
            ],
          },
        },
      ],
    };
    const tokens = await source.read(answerTokens(answer), sent, never);
    assert.deepEqual(tokens, {
      prompt_token_ids: [1, 2, 3],
      generation_token_ids: [40, 41],
      generation_log_probs: [-0.5, -1.25],
    });
    assert.deepEqual(posted, [
      ['/apply-template', { messages: [{ role: 'user', content: 'hi' }] }],
      ['/tokenize', { content: '<s>user: hi', add_special: true, parse_special: true }],
    ]);
    assert.throws(
      () => source.askFor({ messages: [], stream: true, tools: [{ type: 'function' }] }, 'chat'),
      TokenIdCaptureUnsupported,
    );
  });

  it('vLLM without prompt_token_ids: the prompt ids come from /tokenize', async () => {
    const source = new TokenIdSource('vllm', (path) => {
      assert.equal(path, '/tokenize');
      return Promise.resolve({ tokens: [7, 8] });
    });
    const answer = { choices: [{ logprobs: { content: [{ token: 'token_id:9', logprob: -0.1 }] } }] };
    assert.deepEqual(await source.read(answerTokens(answer), { messages: [] }, never), {
      prompt_token_ids: [7, 8],
      generation_token_ids: [9],
      generation_log_probs: [-0.1],
    });
  });

  const malformed: [string, Record<string, unknown>][] = [
    [
      'ids that disagree',
      {
        prompt_token_ids: [1],
        choices: [{ token_ids: [5], logprobs: { content: [{ token: 'token_id:6', logprob: -1 }] } }],
      },
    ],
    [
      'a token that is no id',
      { prompt_token_ids: [1], choices: [{ logprobs: { content: [{ token: 'hello', logprob: -1 }] } }] },
    ],
    [
      'a log-prob that is no number',
      { prompt_token_ids: [1], choices: [{ logprobs: { content: [{ token: 'token_id:6', logprob: 'x' }] } }] },
    ],
    ['a negative prompt id', { prompt_token_ids: [-1], choices: [{ logprobs: { content: [] } }] }],
  ];
  for (const [what, answer] of malformed) {
    it(`refuses ${what} (TokenIdsMalformed)`, async () => {
      const source = new TokenIdSource('vllm', () => Promise.reject(new Error('not called')));
      await assert.rejects(async () => source.read(answerTokens(answer), {}, never), TokenIdsMalformed);
    });
  }
});
