/**
 * The remote agent with `token_id_capture: true`, every hop real HTTP (agent, recording environment, model server on
 * loopback, scripted vLLM, a service built with the kit): attempts of one rollout never mix (`-a1` is its own
 * capture), a service that rewrites the model's text gets its row masked with the reason, and the setting without
 * `model_server` stops start-up with one paragraph.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { request } from '../../src/http/client.js';
import type { Listening } from '../../src/http/server.js';
import type { ModelCallCapture } from '../../src/model-server/records.js';
import { createModelServer, type ModelServer } from '../../src/model-server/server.js';
import { OpenAiUpstream } from '../../src/model-server/upstream.js';
import { serve, type Decide, type RunningService } from '../../src/service/index.js';
import type { ScriptedService } from '../../src/testing/index.js';
import { basicRow, startHarness, type Harness } from '../../test/support/remote-agent.js';
import {
  answerText,
  EOS,
  ids,
  promptIds,
  startVllmUpstream,
  type VllmUpstream,
} from '../../test/support/vllm-upstream.js';
import { parseRemoteAgentConfig } from './config.js';

let upstream: VllmUpstream;
let model: ModelServer;
let modelListening: Listening;

before(async () => {
  upstream = await startVllmUpstream();
  model = createModelServer({
    name: 'policy_model',
    upstream: new OpenAiUpstream({
      baseUrl: upstream.url,
      apiKey: undefined,
      model: 'served',
      defaultHeaders: {},
      extraBody: {},
      timeoutMs: 60_000,
      maxResponseBytes: 8 * 1024 * 1024,
      tokenIdShape: 'vllm',
    }),
    limits: { maxOpen: 1000, maxCallsPerRollout: 100, idleMs: 600_000 },
    maxResponseBytes: 8 * 1024 * 1024,
    log: () => {},
  });
  modelListening = await model.app.listen(0);
});

after(async () => {
  model.close();
  await modelListening.close();
  await upstream.close();
});

function asScripted(service: RunningService): ScriptedService {
  return {
    url: service.url,
    port: service.port,
    calls: [],
    close: () => service.close(),
  } as unknown as ScriptedService;
}

async function harnessWith(decide: Decide): Promise<Harness> {
  const service = await serve(decide, { port: 0 });
  return startHarness({
    service: asScripted(service),
    config: { model_server: { type: 'responses_api_models', name: 'policy_model' }, token_id_capture: true },
    agent: { modelServer: { name: 'policy_model', url: modelListening.url, tokenIdCapture: true } },
  });
}

/** One model call with the task's text; the answer, or `rewrite(answer)`, is the service's final message. */
function oneCall(rewrite: (text: string) => string = (text) => text): Decide {
  return async (conversation, _tools, ctx) => {
    const task = String((conversation[0] as { content: unknown }).content);
    const res = await request(`${ctx.modelBaseUrl!}/chat/completions`, {
      method: 'POST',
      json: { model: 'x', messages: [{ role: 'user', content: task }] },
      timeoutMs: 60_000,
    });
    const text = (res.json() as { choices: { message: { content: string } }[] }).choices[0]!.message.content;
    return { final: rewrite(text) };
  };
}

interface TokenRow {
  mask_sample?: boolean;
  _ng_token_capture: { error?: string; chains?: number };
  ng_model_call_capture: ModelCallCapture;
  response: { output: Record<string, unknown>[] };
}

describe('remote agent with token_id_capture', () => {
  it('keeps attempt 0 and a resumed attempt 1 of one rollout apart, even when they run at once', async () => {
    const harness = await harnessWith(oneCall());
    try {
      const rows = (await Promise.all([
        harness.run(basicRow('attempt zero', { _ng_task_index: 5, _ng_rollout_index: 0 })),
        harness.run(basicRow('attempt one', { _ng_task_index: 5, _ng_rollout_index: 0, _ng_attempt_index: 1 })),
      ])) as unknown as TokenRow[];
      rows.forEach((row, attempt) => {
        const task = attempt === 0 ? 'attempt zero' : 'attempt one';
        assert.equal(row.ng_model_call_capture.rollout_id, attempt === 0 ? '5-0' : '5-0-a1');
        assert.equal(row.mask_sample, undefined, JSON.stringify(row._ng_token_capture));
        assert.equal(row._ng_token_capture.chains, 1);
        const [carrier, ...more] = row.response.output.filter((item) => item.generation_token_ids);
        assert.equal(more.length, 0);
        const history = [{ role: 'user', content: task }];
        assert.deepEqual(carrier!.prompt_token_ids, promptIds(history));
        assert.deepEqual(carrier!.generation_token_ids, [...ids(answerText(history)), EOS]);
      });
    } finally {
      await harness.close();
    }
  });

  it('masks the row, with the reason, when the service returns other text than the model generated', async () => {
    const harness = await harnessWith(oneCall((text) => text.toUpperCase()));
    try {
      const row = (await harness.run(
        basicRow('shout', { _ng_task_index: 1, _ng_rollout_index: 0 }),
      )) as unknown as TokenRow;
      assert.equal(row.mask_sample, true);
      assert.match(row._ng_token_capture.error!, /"reply to: shout", which is not in the row's output/);
      assert.ok(row.response.output.every((item) => item.generation_token_ids === undefined));
    } finally {
      await harness.close();
    }
  });

  it('token_id_capture without model_server stops start-up, naming both keys', () => {
    assert.throws(
      () =>
        parseRemoteAgentConfig(
          {
            agent_base_url: 'http://127.0.0.1:9',
            resources_server: { type: 'resources_servers', name: 'env' },
            token_id_capture: true,
          },
          'remote_agent',
        ),
      /remote_agent\.responses_api_agents\.remote_agent\.token_id_capture is true, but remote_agent\.responses_api_agents\.remote_agent\.model_server is not set/,
    );
  });
});
