/**
 * Issue #24 at the remote agent: a local model server (llama.cpp's `llama-server`) answers without the request's
 * echoes and with usage cut short. Strict by default (the rollout fails for good, with today's text); with
 * `fill_echo_fields: true` the answer is completed from the request, the rows carry `_ng_usage_filled`, and an
 * output item that is itself invalid still fails for good. The last test runs the real `gym env start` and
 * `gym eval run` on the counter tasks.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { createCounterServer } from '../../resources_servers/example_session_state_mgmt/app.js';
import { findFreePort, installRoot } from '../../src/config/index.js';
import { ConfigError } from '../../src/errors.js';
import { assistantMessage, functionCall, startScriptedService, type ScriptedService } from '../../src/testing/index.js';
import { COUNTER_TASKS, readJsonl, runRemoteAgentEval, startGymEnv, tempDir } from '../../test/support/cli.js';
import { LOCAL_SERVER_USAGE, localCounterService, localServerShape } from '../../test/support/local-model-server.js';
import { COUNTER_TOOLS } from '../../src/counter/tools.js';
import { basicRow, listenEnv, startHarness } from '../../test/support/remote-agent.js';
import { parseRemoteAgentConfig } from './config.js';

const TODAYS_ERROR =
  'agent loop failed: remote service returned an invalid Responses API object: ' +
  'parallel_tool_calls: required; tool_choice: required; tools: required (+1 more)';

const COUNTER_ENV = 'example_session_state_mgmt_resources_server';

const services: ScriptedService[] = [];
after(async () => {
  for (const service of services) await service.close();
});

describe('fill_echo_fields (D24)', () => {
  test('off (the default): the rollout fails for good with the text strict validation gives', async () => {
    const h = await startHarness({
      service: localCounterService,
      env: await listenEnv(createCounterServer(COUNTER_ENV), COUNTER_ENV),
    });
    try {
      const result = await h.run(basicRow('add 1 then add 2 then get the count'));
      assert.equal(result.error, TODAYS_ERROR);
      assert.equal(result._ng_failure_terminal, true);
      assert.equal(result.reward, 0);
      assert.equal(result._ng_usage_filled, undefined);
      assert.equal(h.service.calls.length, 1);
    } finally {
      await h.close();
    }
  });

  test('on: the completed object is exactly what a complete implementation sends for that request', async () => {
    const message = assistantMessage('The count is 6.', 'msg_local');
    const h = await startHarness({
      service: [localServerShape({ id: 'resp_local', object: 'response', output: [message], status: 'completed' })],
      config: { fill_echo_fields: true },
    });
    try {
      const params = {
        input: [{ role: 'user', content: 'what is the count?' }],
        tools: COUNTER_TOOLS,
        tool_choice: 'required',
        parallel_tool_calls: false,
      };
      // The live route answers with the (single) step's response, so the completed object itself is visible.
      const res = await h.post('/v1/responses', params);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const complete = {
        completed_at: 1796155686,
        id: 'resp_local',
        object: 'response',
        output: [message],
        status: 'completed',
        created_at: 1796155686,
        model: 'tiny',
        tools: COUNTER_TOOLS,
        tool_choice: 'required',
        parallel_tool_calls: false,
        usage: { ...LOCAL_SERVER_USAGE, output_tokens_details: { reasoning_tokens: 0 } },
      };
      assert.deepEqual(res.body, complete);
    } finally {
      await h.close();
    }
  });

  test('on: the counter tasks succeed and every row carries _ng_usage_filled; failure rows carry it too', async () => {
    const env = await listenEnv(createCounterServer(COUNTER_ENV), COUNTER_ENV);
    const h = await startHarness({ service: localCounterService, env, config: { fill_echo_fields: true } });
    try {
      const row = { ...basicRow('add 1 then add 2 then get the count'), initial_count: 3, expected_count: 6 };
      const result = await h.run(row);
      assert.equal(result._ng_failure_class, undefined, result.error);
      assert.equal(result.reward, 1);
      assert.equal(result._ng_usage_filled, true);
      assert.deepEqual(result.response.usage, {
        input_tokens: 192 * 4,
        output_tokens: 64 * 4,
        total_tokens: 256 * 4,
        input_tokens_details: { cached_tokens: 0 },
        output_tokens_details: { reasoning_tokens: 0 },
      });
      // A stale mark on an input row is not this rollout's.
      const failed = await h.run({ ...row, expected_count: undefined, _ng_usage_filled: 'stale' });
      assert.match(String(failed.error), /^\/verify on the resources server failed/);
      assert.equal(failed._ng_usage_filled, true);
      const partialUsage = failed._ng_partial_response?.usage as
        { output_tokens_details?: { reasoning_tokens?: number } } | undefined;
      assert.equal(partialUsage?.output_tokens_details?.reasoning_tokens, 0);
    } finally {
      await h.close();
    }
  });

  test('on: complete usage is not marked; only the echo fields are filled', async () => {
    const complete = localServerShape({ id: 'r', object: 'response', output: [assistantMessage('done')] });
    complete.usage = { ...LOCAL_SERVER_USAGE, output_tokens_details: { reasoning_tokens: 5 } };
    const h = await startHarness({ service: [complete], config: { fill_echo_fields: true } });
    try {
      const result = await h.run(basicRow());
      assert.equal(result.reward, 1, result.error);
      assert.equal(Object.hasOwn(result, '_ng_usage_filled'), false);
    } finally {
      await h.close();
    }
  });

  test('on: an invalid output item stays terminal, with the text a complete object with that item gets', async () => {
    const call = { ...functionCall('increment_counter', { count: 1 }, 'c_0'), arguments: { count: 1 } };
    const h = await startHarness({
      service: [localServerShape({ id: 'r', object: 'response', output: [call] })],
      config: { fill_echo_fields: true },
    });
    try {
      const result = await h.run(basicRow());
      assert.equal(result._ng_failure_terminal, true);
      assert.equal(
        result.error,
        'agent loop failed: remote service returned an invalid Responses API object: output[0].arguments: expected string, received object',
      );
      assert.equal(result._ng_partial_response, undefined, 'nothing of an invalid answer enters the trajectory');
    } finally {
      await h.close();
    }
  });

  test('the key is validated like the others: true or false, unset is off', () => {
    const base = { agent_base_url: 'http://127.0.0.1:9', resources_server: { type: 'resources_servers', name: 'env' } };
    assert.equal(parseRemoteAgentConfig(base, 'remote_agent').fillEchoFields, false);
    assert.equal(parseRemoteAgentConfig({ ...base, fill_echo_fields: true }, 'remote_agent').fillEchoFields, true);
    assert.throws(
      () => parseRemoteAgentConfig({ ...base, fill_echo_fields: 'yes' }, 'remote_agent'),
      (err: unknown) =>
        err instanceof ConfigError &&
        err.message ===
          'remote_agent.responses_api_agents.remote_agent.fill_echo_fields = "yes" is invalid: it must be true or false.',
    );
  });

  test('gym env start + gym eval run on the counter tasks: strict fails all five for good; the key makes all five succeed, marked', async () => {
    const service = await startScriptedService(localCounterService);
    services.push(service);
    const dir = tempDir('tsgym-echo-');
    const agentKey = '++remote_agent.responses_api_agents.remote_agent';
    for (const fill of [false, true]) {
      const headPort = await findFreePort();
      const config = [
        `+config_paths=[${path.join(installRoot(), 'counter_remote.yaml')}]`,
        `${agentKey}.agent_base_url=${service.url}`,
        ...(fill ? [`${agentKey}.fill_echo_fields=true`] : []),
        `++head_server.port=${headPort}`,
      ];
      const start = await startGymEnv(config, {
        cwd: dir,
        logDir: path.join(dir, `logs-${fill}`),
        servers: 2,
        timeoutMs: 60_000,
      });
      try {
        const out = `out-${fill}/rollouts.jsonl`;
        const run = await runRemoteAgentEval(headPort, COUNTER_TASKS, out, { cwd: dir });
        const rollouts = readJsonl(path.join(dir, out));
        const failures = readJsonl(path.join(dir, `out-${fill}/rollouts_failures.jsonl`));
        if (!fill) {
          assert.equal(rollouts.length, 0);
          assert.equal(failures.length, 5);
          for (const row of failures) {
            assert.equal(row.error, TODAYS_ERROR);
            assert.equal(row._ng_failure_terminal, true);
          }
          continue;
        }
        assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);
        assert.deepEqual(failures, []);
        assert.equal(rollouts.length, 5);
        for (const row of rollouts) {
          assert.equal(row.reward, 1);
          assert.equal(row._ng_usage_filled, true);
        }
      } finally {
        await start.stop();
      }
    }
  });
});
