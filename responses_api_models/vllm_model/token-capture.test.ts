/**
 * Token-id capture end to end, through real processes: `gym env start` runs the counter environment, the remote agent
 * (`model_server`, `token_id_capture: true`) and `vllm_model` (`return_token_id_information: true`) in front of a
 * scripted vLLM (test/support/vllm-upstream.ts); a scripted agent service makes three append-only model calls per
 * rollout through the URL it is handed; `gym eval run` collects 33 rows at once. Each row's output then carries one
 * chain with exactly the ids and log-probs the upstream answered for that rollout's own conversation; the row whose
 * second call is cut mid-stream is masked with the reason.
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import { findFreePort, installRoot } from '../../src/config/index.js';
import { request } from '../../src/http/client.js';
import type { ModelCallCapture } from '../../src/model-server/records.js';
import {
  assistantMessage,
  finalAnswer,
  responseObject,
  startScriptedService,
  type ServiceCall,
} from '../../src/testing/index.js';
import { readJsonl, runRemoteAgentEval, startGymEnv, tempDir } from '../../test/support/cli.js';
import {
  answerText,
  appendedHistory,
  EOS,
  ids,
  logProbOf,
  promptIds,
  startVllmUpstream,
  type VllmUpstream,
} from '../../test/support/vllm-upstream.js';

const cleanups: (() => Promise<unknown>)[] = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

function taskOf(call: ServiceCall): string {
  const input = call.body.input as unknown;
  const first = Array.isArray(input) ? (input[0] as { content?: unknown }) : undefined;
  return typeof first?.content === 'string' ? first.content : String(input);
}

/** Three model calls through the rollout's URL, then the three answers as the service's output. */
async function brain(call: ServiceCall): Promise<unknown> {
  const base = call.headers['x-gym-model-base-url'];
  if (typeof base !== 'string') throw new Error('no model base URL');
  const task = taskOf(call);
  const texts: string[] = [];
  for (let k = 0; k < 3; k++) {
    const history = appendedHistory(task, k);
    const streamed = task.includes('CUT') && k === 1;
    const res = await request(`${base}/chat/completions`, {
      method: 'POST',
      json: streamed
        ? { model: 'x', messages: [...history, { role: 'user', content: 'CUT' }], stream: true }
        : { model: 'x', messages: history },
      timeoutMs: 60_000,
    });
    if (res.status !== 200) return finalAnswer(`model call failed: ${res.status}`);
    if (streamed) return finalAnswer('gave up');
    texts.push((res.json() as { choices: { message: { content: string } }[] }).choices[0]!.message.content);
  }
  return responseObject(texts.map((text) => assistantMessage(text)));
}

test('vllm_model under gym env start: 33 concurrent rollouts, each row carries its own exact chain, a cut call masks its row', async () => {
  const dir = tempDir('tsgym-tokens-');
  const upstream: VllmUpstream = await startVllmUpstream();
  cleanups.push(() => upstream.close());
  const service = await startScriptedService(brain);
  cleanups.push(() => service.close());
  const tasks = Array.from({ length: 32 }, (_, i) => `task ${i}: ${'z'.repeat(i)}`);
  tasks.push('task 32: CUT');
  const input = path.join(dir, 'tasks.jsonl');
  writeFileSync(
    input,
    tasks
      .map((task) =>
        JSON.stringify({
          responses_create_params: { input: [{ role: 'user', content: task }] },
          initial_count: 0,
          expected_count: 0,
        }),
      )
      .join('\n') + '\n',
  );
  const headPort = await findFreePort();
  const agentKey = '++remote_agent.responses_api_agents.remote_agent';
  const modelKey = '++policy_model.responses_api_models.vllm_model';
  const config = [
    `+config_paths=[${path.join(installRoot(), 'counter_remote.yaml')},${path.join(installRoot(), 'responses_api_models/vllm_model/configs/vllm_model.yaml')}]`,
    `${agentKey}.agent_base_url=${service.url}`,
    `${agentKey}.model_server={type: responses_api_models, name: policy_model}`,
    `${agentKey}.token_id_capture=true`,
    `${modelKey}.return_token_id_information=true`,
    `++policy_base_url=${upstream.url}`,
    '++policy_api_key=',
    '++policy_model_name=served-model',
    `++head_server.port=${headPort}`,
  ];
  const start = await startGymEnv(config, { cwd: dir, logDir: path.join(dir, 'logs'), servers: 3 });
  cleanups.push(start.stop);

  const run = await runRemoteAgentEval(headPort, input, 'out/r.jsonl', { cwd: dir });
  assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);
  const rows = readJsonl(path.join(dir, 'out/r.jsonl'));
  assert.equal(
    rows.length,
    33,
    `${run.stdout}\n${run.stderr}\n${readFileSync(path.join(dir, 'out/r_failures.jsonl'), 'utf8').slice(0, 3000)}`,
  );
  for (const row of rows) {
    const task = tasks[row._ng_task_index as number]!;
    const report = row._ng_token_capture as Record<string, unknown>;
    const capture = row.ng_model_call_capture as ModelCallCapture;
    assert.ok(!JSON.stringify(capture).includes('prompt_token_ids'), 'the evaluation record carries no token arrays');
    if (task.includes('CUT')) {
      assert.equal(row.mask_sample, true, JSON.stringify(report));
      assert.match(String(report.error), /model call 1 .* failed: upstream_stream_cut/);
      continue;
    }
    assert.equal(row.mask_sample, undefined, `${task}: ${JSON.stringify(report)}`);
    assert.deepEqual(
      [report.n_calls, report.roots, report.chains, report.delivered_fraction, report.unresolved_retries],
      [3, 1, 1, 1, 0],
    );
    const carriers = (row.response as { output: Record<string, unknown>[] }).output.filter(
      (item) => item.generation_token_ids,
    );
    assert.equal(carriers.length, 3, task);
    carriers.forEach((item, k) => {
      const history = appendedHistory(task, k);
      const generation = [...ids(answerText(history)), EOS];
      // The chain's prompt is the contiguous sequence: this call's prompt exactly (the service only appended).
      assert.deepEqual(item.prompt_token_ids, promptIds(history), `${task} call ${k}`);
      assert.deepEqual(item.generation_token_ids, generation, `${task} call ${k}`);
      assert.deepEqual(
        item.generation_log_probs,
        generation.map((id, i) => logProbOf(id, i)),
      );
    });
  }
  const asked = upstream.requests.filter((r) => r.path === '/v1/chat/completions');
  assert.ok(asked.every((r) => r.body.return_tokens_as_token_ids === true && r.body.top_logprobs === 0));
});
