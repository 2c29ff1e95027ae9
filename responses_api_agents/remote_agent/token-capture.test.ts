/**
 * The remote agent with `token_id_capture: true`, every hop real HTTP (agent, recording environment, model server on
 * loopback, scripted vLLM, a service built with the kit): attempts of one rollout never mix (`-a1` is its own
 * capture), a service that rewrites the model's text gets its row masked with the reason, and the setting without
 * `model_server` stops start-up with one paragraph.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { request } from '../../src/http/client.js';
import type { ModelCallCapture } from '../../src/model-server/records.js';
import type { Decide } from '../../src/service/index.js';
import { startTestModelServer, type TestModelServer } from '../../test/support/model-server.js';
import { basicRow, startKitHarness, withModelServer, type Harness } from '../../test/support/remote-agent.js';
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
let model: TestModelServer;

before(async () => {
  upstream = await startVllmUpstream();
  model = await startTestModelServer({ upstreamUrl: upstream.url, tokenIdShape: 'vllm' });
});

after(async () => {
  await model.close();
  await upstream.close();
});

function harnessWith(decide: Decide): Promise<Harness> {
  return startKitHarness(decide, withModelServer(model.url, true));
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
