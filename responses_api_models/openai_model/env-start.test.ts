/**
 * The model servers under a real `gym env start`: the counter environment, the remote agent with `model_server`, and
 * `openai_model` in front of a scripted upstream, then a real `gym eval run --no-serve`. Every row carries the calls
 * its service made through the URL it was handed; the api key appears in no row, log or output. And `vllm_model` with a
 * `return_token_id_information` that is not true or false stops start-up with one paragraph naming the key.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import { findFreePort, installRoot } from '../../src/config/index.js';
import { request } from '../../src/http/client.js';
import type { ModelCallCapture } from '../../src/model-server/records.js';
import { counterTaskReply } from '../../src/testing/counter-brain.js';
import { startScriptedService, type ScriptedService, type ServiceCall } from '../../src/testing/index.js';
import { COUNTER_TASKS, readJsonl, runGym, runRemoteAgentEval, startGymEnv, tempDir } from '../../test/support/cli.js';
import { startScriptedUpstream, type ScriptedUpstream } from '../../test/support/scripted-upstream.js';

const API_KEY = `sk-envstart-${process.pid}-${Date.now()}-s3cr3t`;

const cleanups: (() => Promise<unknown>)[] = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    return statSync(full).isDirectory() ? filesUnder(full) : [full];
  });
}

/** Solves the counter tasks, asking the model once per step through the rollout's URL. */
async function brain(call: ServiceCall): Promise<unknown> {
  const base = call.headers['x-gym-model-base-url'];
  if (typeof base !== 'string') return counterTaskReply(call);
  const res = await request(`${base}/chat/completions`, {
    method: 'POST',
    json: {
      model: 'x',
      messages: [{ role: 'user', content: 'step' }],
      stream: true,
      stream_options: { include_usage: true },
    },
    timeoutMs: 60_000,
  });
  if (res.status !== 200) throw new Error(`model call failed: HTTP ${res.status}`);
  return counterTaskReply(call);
}

test('gym env start runs openai_model; rows carry the calls made through each rollout URL; the key is nowhere', async () => {
  const dir = tempDir('tsgym-models-');
  const upstream: ScriptedUpstream = await startScriptedUpstream();
  cleanups.push(() => upstream.close());
  const service: ScriptedService = await startScriptedService(brain);
  cleanups.push(() => service.close());
  const headPort = await findFreePort();
  const agentKey = '++remote_agent.responses_api_agents.remote_agent';
  const config = [
    `+config_paths=[${path.join(installRoot(), 'counter_remote.yaml')},${path.join(installRoot(), 'responses_api_models/openai_model/configs/openai_model.yaml')}]`,
    `${agentKey}.agent_base_url=${service.url}`,
    `${agentKey}.model_server={type: responses_api_models, name: policy_model}`,
    `++policy_base_url=${upstream.url}`,
    '++policy_api_key=${oc.env:POLICY_KEY}',
    '++policy_model_name=served-model',
    `++head_server.port=${headPort}`,
  ];
  const logDir = path.join(dir, 'logs');
  const env = { POLICY_KEY: API_KEY };
  const start = await startGymEnv(config, { cwd: dir, env, logDir, servers: 3 });
  cleanups.push(start.stop);

  const run = await runRemoteAgentEval(headPort, COUNTER_TASKS, 'out/rollouts.jsonl', { cwd: dir, env });
  assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);
  const rows = readJsonl(path.join(dir, 'out/rollouts.jsonl'));
  assert.equal(rows.length, 5);
  for (const row of rows) {
    assert.equal(row.reward, 1);
    const capture = row.ng_model_call_capture as ModelCallCapture;
    assert.equal(capture.rollout_id, `${String(row._ng_task_index)}-${String(row._ng_rollout_index)}`);
    const steps = (row.response as { output: { type: string }[] }).output.filter(
      (item) => item.type === 'message',
    ).length;
    assert.ok(steps >= 1);
    assert.ok(capture.calls.length >= 2, JSON.stringify(capture));
    for (const call of capture.calls) {
      assert.deepEqual(
        [call.dialect, call.tokens_in, call.tokens_out, call.error_category, call.model],
        ['chat', 4, 7, null, 'served-model'],
      );
      assert.equal(typeof call.latency_ttft_ms, 'number');
    }
    assert.equal(capture.metrics.num_calls, capture.calls.length);
  }
  assert.ok(upstream.requests.every((r) => r.headers.authorization === `Bearer ${API_KEY}`));
  const profile = await runGym(['eval', 'profile', '--rollouts', 'out/rollouts.jsonl', '--json'], { cwd: dir });
  assert.equal(profile.code, 0, profile.stderr);
  const totalCalls = rows.reduce((sum, row) => sum + (row.ng_model_call_capture as ModelCallCapture).calls.length, 0);
  const agents = (JSON.parse(profile.stdout) as { agents: { model_calls?: Record<string, number> }[] }).agents;
  const { mean_latency_ms: meanLatency, ...counted } = agents[0]!.model_calls!;
  assert.ok(typeof meanLatency === 'number' && meanLatency >= 0, `mean latency ${meanLatency}`);
  assert.deepEqual(counted, {
    rollouts: 5,
    num_calls: totalCalls,
    failed_calls: 0,
    tokens_in: 4 * totalCalls,
    tokens_out: 7 * totalCalls,
    tokens_reasoning: totalCalls,
    tokens_total: 11 * totalCalls,
    cached_tokens: 2 * totalCalls,
  });

  const text = await runGym(['eval', 'profile', '--rollouts', 'out/rollouts.jsonl'], { cwd: dir });
  assert.match(
    text.stdout,
    new RegExp(
      `model calls: ${totalCalls} over 5 rollouts \\(0 failed\\); tokens in ${4 * totalCalls}, out ${7 * totalCalls}, cached ${2 * totalCalls}, reasoning ${totalCalls}; mean latency`,
    ),
  );

  const explained = await runGym(['eval', 'explain', 'out/rollouts.jsonl', '0:0'], { cwd: dir });
  assert.equal(explained.code, 0, explained.stderr);
  assert.match(
    explained.stdout,
    /Model calls \(\d+, rollout id 0-0\):\n {2}call \d+ {2}served-model \(chat\) {2}HTTP 200 {2}4 in, 7 out {2}\d+ ms\n/,
  );

  await start.stop();
  const seen = run.stdout + run.stderr + start.stdout() + start.gym.stderr() + profile.stdout + explained.stdout;
  assert.ok(!seen.includes(API_KEY), 'the key appears in no command output');
  for (const file of filesUnder(dir))
    assert.ok(!readFileSync(file, 'latin1').includes(API_KEY), `the key appears in ${file}`);
});

test('vllm_model with a return_token_id_information that is not true/false stops start-up, naming the key', async () => {
  const dir = tempDir('tsgym-models-');
  const result = await runGym(
    [
      'env',
      'start',
      `+config_paths=[${path.join(installRoot(), 'responses_api_models/vllm_model/configs/vllm_model.yaml')}]`,
      '++policy_base_url=http://127.0.0.1:9/v1',
      '++policy_api_key=none',
      '++policy_model_name=m',
      '++policy_model.responses_api_models.vllm_model.return_token_id_information=sometimes',
      `++head_server.port=${await findFreePort()}`,
      `++nemo_gym_log_dir=${path.join(dir, 'logs')}`,
    ],
    { cwd: dir },
  );
  assert.equal(result.code, 1, result.stdout + result.stderr);
  assert.match(
    result.stderr,
    /policy_model\.responses_api_models\.vllm_model\.return_token_id_information must be true or false, got "sometimes"/,
  );
});
