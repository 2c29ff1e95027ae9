/**
 * A remote agent with `model_server`: each rollout's service is told its model URL, calls the model through it, and
 * the row carries the records of exactly those calls. Every hop is real HTTP: the agent, a recording environment, the
 * model server (in process, listening on loopback), a scripted OpenAI-compatible upstream, and services built with
 * the service kit (`ctx.modelBaseUrl`), among them the openai-compatible example with no `--model-url`.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createOpenAiDecide } from '../../examples/openai-compatible/brain.js';
import { MODEL_BASE_URL_HEADER } from '../../src/contract/gym-wire.js';
import { request } from '../../src/http/client.js';
import type { ModelCallCapture } from '../../src/model-server/records.js';
import type { Decide } from '../../src/service/index.js';
import { startTestModelServer, type TestModelServer } from '../../test/support/model-server.js';
import {
  basicRow,
  startKitHarness,
  withModelServer,
  type Harness,
  type RunResult,
} from '../../test/support/remote-agent.js';
import { startScriptedUpstream, type ScriptedUpstream } from '../../test/support/scripted-upstream.js';

const API_KEY = 'sk-live-DO-NOT-LEAK-42424242';

let upstream: ScriptedUpstream;
let model: TestModelServer;
const modelLogs: string[] = [];

before(async () => {
  upstream = await startScriptedUpstream();
  model = await startTestModelServer({
    upstreamUrl: upstream.url,
    apiKey: API_KEY,
    model: 'served-model',
    log: (line) => modelLogs.push(line),
  });
});

after(async () => {
  await model.close();
  await upstream.close();
});

function harnessWith(decide: Decide): Promise<Harness> {
  return startKitHarness(decide, withModelServer(model.url));
}

/** Every model base URL a service was handed. */
const givenUrls: string[] = [];

/** Calls the model twice through the rollout's URL (chat, then a streamed responses call), then finishes. */
const twoCalls: Decide = async (conversation, _tools, ctx) => {
  const base = ctx.modelBaseUrl;
  if (!base) throw new Error('no model base URL was given');
  givenUrls.push(base);
  const text = String((conversation[0] as { content: unknown }).content);
  const chat = await request(`${base}/chat/completions`, {
    method: 'POST',
    json: { model: 'x', messages: [{ role: 'user', content: text }] },
    timeoutMs: 60_000,
  });
  const streamed = await request(`${base}/responses`, {
    method: 'POST',
    json: { model: 'x', input: text, stream: true },
    timeoutMs: 60_000,
  });
  if (chat.status !== 200 || streamed.status !== 200)
    throw new Error(`model calls failed: ${chat.status} ${streamed.status}`);
  ctx.state.base = base;
  return { final: `done via ${base}` };
};

function captureOf(row: RunResult): ModelCallCapture {
  const capture = row.ng_model_call_capture as ModelCallCapture | undefined;
  assert.ok(capture, `the row carries ng_model_call_capture: ${JSON.stringify(row).slice(0, 500)}`);
  return capture;
}

describe('remote agent with model_server', () => {
  it('32 concurrent rollouts each get their own model URL, and each row carries exactly its own calls', async () => {
    const harness = await harnessWith(twoCalls);
    try {
      const rows = await Promise.all(
        Array.from({ length: 32 }, (_, i) =>
          harness.run(basicRow('q'.repeat(i + 1), { _ng_task_index: i, _ng_rollout_index: 0 })),
        ),
      );
      rows.forEach((row, i) => {
        assert.equal(row.reward, 1, JSON.stringify(row).slice(0, 500));
        const capture = captureOf(row);
        assert.equal(capture.rollout_id, `${i}-0`);
        assert.deepEqual(
          capture.calls.map((c) => [c.dialect, c.tokens_in, c.tokens_out, c.status_code, c.error_category]),
          [
            ['chat', i + 1, 7, 200, null],
            ['responses', i + 1, 7, 200, null],
          ],
          `rollout ${i}`,
        );
        assert.equal(capture.metrics.num_calls, 2);
        assert.equal(capture.metrics.tokens_in, 2 * (i + 1));
        assert.equal(capture.metrics.tokens_total, 2 * (i + 1 + 7));
        assert.equal(typeof capture.calls[1]!.latency_ttft_ms, 'number');
        assert.ok(capture.metrics.latency_total_ms! > 0);
      });
      assert.equal(model.server.rollouts.size, 0, 'every rollout was closed');
      const everything = JSON.stringify(rows) + harness.logs.join('\n') + modelLogs.join('\n');
      assert.ok(!everything.includes(API_KEY), 'the api key appears in no row and no log');
      // The URL a finished rollout was given now answers 404.
      const given = givenUrls.filter((url) => url.includes('/ng-rollout/3-0.'));
      assert.equal(given.length, 1, givenUrls.join('\n'));
      const late = await request(`${given[0]!}/chat/completions`, {
        method: 'POST',
        json: { messages: [{ role: 'user', content: 'late' }] },
        timeoutMs: 60_000,
      });
      assert.equal(late.status, 404);
    } finally {
      await harness.close();
    }
  });

  it('names the rollout by _ng_rollout_id or the attempt, and a failure row carries its calls too', async () => {
    let seenUrl = '';
    const failing: Decide = async (conversation, tools, ctx) => {
      seenUrl = ctx.modelBaseUrl ?? '';
      await twoCalls(conversation, tools, ctx);
      throw new Error('the service gives up after calling the model');
    };
    const harness = await harnessWith(failing);
    try {
      const row = await harness.run(
        basicRow('fail', { _ng_task_index: 5, _ng_rollout_index: 2, _ng_attempt_index: 1 }),
      );
      assert.equal(row._ng_failure_class, 'remote_agent_error');
      // The attempt's own key on the model server: its rollout id and a suffix no other dispatch of it shares.
      assert.match(seenUrl, /\/ng-rollout\/5-2-a1\.[0-9a-f]{12}\/v1$/);
      assert.ok(seenUrl.startsWith(`${model.url}/ng-rollout/`), seenUrl);
      const capture = captureOf(row);
      assert.equal(capture.rollout_id, '5-2-a1');
      assert.equal(capture.calls.length, 2);
      const named = await harness.run(
        basicRow('fail', { _ng_rollout_id: 'my.run_7', _ng_task_index: 0, _ng_rollout_index: 0 }),
      );
      assert.equal(captureOf(named).rollout_id, 'my.run_7');
      // The longest id there is: its key on the model server is cut to fit; the row still names the whole id.
      const longest = 'L'.repeat(200);
      const long = await harness.run(
        basicRow('fail', { _ng_rollout_id: longest, _ng_task_index: 0, _ng_rollout_index: 0 }),
      );
      assert.match(seenUrl, /\/ng-rollout\/L{187}\.[0-9a-f]{12}\/v1$/);
      assert.deepEqual([captureOf(long).rollout_id, captureOf(long).calls.length], [longest, 2]);
    } finally {
      await harness.close();
    }
  });

  it('the openai-compatible example needs no --model-url: it calls through the URL Gym hands it', async () => {
    const harness = await harnessWith(createOpenAiDecide({ model: 'any', api: 'chat' }));
    try {
      const row = await harness.run(basicRow('what is six times seven?', { _ng_task_index: 0, _ng_rollout_index: 0 }));
      assert.equal(row.reward, 1, JSON.stringify(row).slice(0, 500));
      const capture = captureOf(row);
      assert.deepEqual(
        capture.calls.map((c) => [c.dialect, c.tokens_in, c.model]),
        [['chat', 'what is six times seven?'.length, 'served-model']],
      );
      const last = upstream.requests.at(-1)!;
      assert.equal(last.headers.authorization, `Bearer ${API_KEY}`, 'the model server, not the service, holds the key');
    } finally {
      await harness.close();
    }
  });

  it("the live route under /ng-rollout/<id>/ hands the service that rollout's model URL; the caller owns the rollout", async () => {
    const harness = await harnessWith(twoCalls);
    try {
      const body = { input: [{ role: 'user', content: 'live one' }] };
      // The caller opens the rollout on the model server, calls the agent under its id, then closes it.
      assert.equal(
        (await request(`${model.url}/ng-rollout/live-7/open`, { method: 'POST', json: {}, timeoutMs: 60_000 })).status,
        200,
      );
      const res = await harness.post<{ output: { content?: { text: string }[] }[] }>(
        '/ng-rollout/live-7/v1/responses',
        body,
      );
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.output.at(-1)!.content![0]!.text, `done via ${model.url}/ng-rollout/live-7/v1`);
      const closed = await request(`${model.url}/ng-rollout/live-7/close`, {
        method: 'POST',
        json: {},
        timeoutMs: 60_000,
      });
      assert.equal((closed.json() as ModelCallCapture).calls.length, 2);
      const captured = await harness.post<{ output: { content?: { text: string }[] }[] }>(
        '/ng-rollout/live-8/training-token-capture/v1/responses',
        body,
      );
      // Not opened by its caller: the service's calls are refused (404), never recorded elsewhere, and it fails.
      assert.equal(captured.status, 500, JSON.stringify(captured.body));
      assert.match(JSON.stringify(captured.body), /model calls failed: 404 404/);
      const plain = await harness.post('/v1/responses', { input: [{ role: 'user', content: 'no rollout' }] });
      assert.equal(plain.status, 500, 'the plain live route hands no model URL, and this service needs one');
      assert.match(JSON.stringify(plain.body), /no model base URL was given/);
      const bad = await harness.post('/ng-rollout/.hidden/v1/responses', body);
      assert.equal(bad.status, 404);
    } finally {
      await harness.close();
    }
  });

  it('without model_server the service is told nothing and rows carry no capture', async () => {
    const seen: (string | undefined)[] = [];
    const harness = await startKitHarness((_c, _t, ctx) => {
      seen.push(ctx.modelBaseUrl);
      return { final: 'ok' };
    });
    try {
      const row = await harness.run(basicRow('x', { _ng_task_index: 0, _ng_rollout_index: 0 }));
      assert.equal(row.reward, 1);
      assert.equal(row.ng_model_call_capture, undefined);
      assert.deepEqual(seen, [undefined]);
      assert.equal(MODEL_BASE_URL_HEADER, 'x-gym-model-base-url');
    } finally {
      await harness.close();
    }
  });
});
