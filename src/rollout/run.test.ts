import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { App, HttpError } from '../http/server.js';
import type { Row } from '../runfiles/row.js';
import type { VerifyRequest } from '../server/resources-server.js';
import { assistantMessage, finalAnswer, functionCall, reply, responseObject, toolAsk } from '../testing/index.js';
import { ResourcesClient } from './resources-client.js';
import { AgentLog, isThrottledOccurrencePrinted } from './log.js';
import {
  basicRow,
  ENV_COOKIE,
  gates,
  listenEnv,
  POST_TIMEOUT_MS,
  startHarness,
  startRecordingEnv,
  typesOf,
  type AgentErrorBody,
  type ResultResponse,
  type RunResult,
} from '../../test/support/remote-agent.js';
import { eventually } from '../../test/support/wait.js';

const STALE = {
  reward: 0.75,
  response: { id: 'stale' },
  error: 'old error',
  _ng_failure_class: 'remote_agent_error',
  _ng_no_persist: true,
  _ng_failure_terminal: true,
  _ng_partial_response: { id: 'stale-partial' },
  _ng_rollout_duration_secs: 99,
};

describe('I. Gym-side failures', () => {
  test('seed fails → failure row naming /seed_session, the service is never called, no verify', async () => {
    const h = await startHarness({
      service: [finalAnswer('never')],
      env: {
        seed: () => {
          throw new HttpError(500, 'seed exploded');
        },
      },
    });
    try {
      const result = await h.run(basicRow());
      assert.equal(result._ng_failure_class, 'remote_agent_error');
      assert.match(result.error!, /^\/seed_session on the resources server failed: HTTP 500: .*seed exploded/);
      assert.equal(h.service.calls.length, 0);
      assert.equal(h.env.to('/verify').length, 0);
      assert.equal(result._ng_partial_response, undefined);
    } finally {
      await h.close();
    }
  });

  test('verify fails → non-terminal failure row naming /verify, reward 0.0, the full trajectory kept as evidence', async () => {
    const h = await startHarness({
      service: [toolAsk(functionCall('increment_counter', { count: 1 })), finalAnswer('done')],
      env: {
        verify: () => {
          throw new HttpError(500, 'verifier down');
        },
      },
    });
    try {
      const result = await h.run(basicRow());
      assert.equal(result.reward, 0.0);
      assert.equal(result._ng_failure_terminal, undefined);
      assert.match(result.error!, /^\/verify on the resources server failed: HTTP 500: .*verifier down/);
      assert.deepEqual(typesOf(result._ng_partial_response!.output), [
        'function_call',
        'function_call_output',
        'message',
      ]);
      // The evidence is the trajectory as the environment got it (the agent keeps it only in the /verify body then).
      assert.deepEqual(result._ng_partial_response, (h.env.to('/verify')[0]!.body as VerifyRequest).response);
    } finally {
      await h.close();
    }
  });

  test('U33: a verify body without a numeric reward fails with a clear "/verify returned an invalid body"', async () => {
    const app = new App().post('/seed_session', () => ({ body: {} })).post('/verify', () => ({ body: { score: 1 } }));
    const env = await listenEnv(app, 'odd_verifier');
    const h = await startHarness({ service: [finalAnswer('ok')], env });
    try {
      const result = await h.run(basicRow());
      assert.match(
        result.error!,
        /^\/verify on the resources server failed: \/verify returned an invalid body .*`reward` is missing/,
      );
    } finally {
      await h.close();
    }
  });

  test('verify extras pass through unchanged', async () => {
    const h = await startHarness({
      service: [finalAnswer('ok')],
      env: { verify: () => ({ reward: 0.5, grading_notes: 'half right' }) },
    });
    try {
      const result = await h.run(basicRow('q', { dataset_extra: 7 }));
      assert.equal(result.reward, 0.5);
      assert.equal(result.grading_notes, 'half right');
      assert.equal(result._ng_failure_class, undefined);
    } finally {
      await h.close();
    }
  });

  test('C4: a success row is exactly what /verify returned; dataset fields it leaves out stay out', async () => {
    let verifyResponse: Record<string, unknown> | undefined;
    const app = new App()
      .post('/seed_session', () => ({ body: {} }))
      .post('/verify', (req) => {
        const body = req.json() as Record<string, unknown>;
        // Like a NeMo Gym environment whose verify model declares only some fields: no answer key, no bulky input.
        verifyResponse = {
          responses_create_params: body.responses_create_params,
          response: body.response,
          reward: 1,
          category: 'kept',
        };
        return { body: verifyResponse };
      });
    const env = await listenEnv(app, 'omitting_env');
    const h = await startHarness({ service: [finalAnswer('ok')], env });
    try {
      const result = await h.run(
        basicRow('q', { ground_truth: 'secret answer', circles: [[1, 2, 3]], category: 'from-row' }),
      );
      assert.deepEqual(result, verifyResponse);
      assert.equal('ground_truth' in result, false);
      assert.equal('verifier_metadata' in result, false);
    } finally {
      await h.close();
    }
  });

  test('an unexpected internal error becomes "unexpected error: …", never an exception out of /run', async () => {
    const env = await startRecordingEnv();
    class BuggyResourcesClient extends ResourcesClient {
      override verify(): Promise<never> {
        return Promise.reject(new TypeError('internal bug'));
      }
    }
    const h = await startHarness({
      service: [finalAnswer('ok')],
      env,
      agent: { resourcesClient: new BuggyResourcesClient(env.name, env.url) },
    });
    try {
      const res = await h.post<RunResult>('/run', basicRow());
      assert.equal(res.status, 200);
      assert.equal(res.body._ng_failure_class, 'remote_agent_error');
      assert.equal(res.body.error, 'unexpected error: TypeError: internal bug');
    } finally {
      await h.close();
    }
  });

  test('skills_ref is ignored with a warning; the rollout proceeds and the service never gets it', async () => {
    const h = await startHarness({ service: [finalAnswer('ok')] });
    try {
      const result = await h.run(basicRow('q', { skills_ref: { name: 'some_skills' } }));
      assert.equal(result.reward, 1.0);
      assert.equal(result._ng_failure_class, undefined);
      assert.ok(h.logs.some((line) => /^WARNING: .*skills_ref/.test(line)));
      assert.ok(!JSON.stringify(h.service.calls[0]!.body).includes('skills_ref'));
    } finally {
      await h.close();
    }
  });

  test('D11 / U30: invalid responses_create_params → a terminal failure row with HTTP 200; nothing is called', async () => {
    const h = await startHarness({ service: [finalAnswer('never')] });
    try {
      for (const params of [{ input: 'x', foo: 1 }, { input: 'x', stream: true }, { tools: [] }]) {
        const res = await h.post<RunResult>('/run', { ...basicRow(), responses_create_params: params });
        assert.equal(res.status, 200);
        assert.equal(res.body._ng_failure_terminal, true);
        assert.match(res.body.error!, /responses_create_params is invalid: /);
      }
      const missing = await h.run({ verifier_metadata: {} });
      assert.equal(missing._ng_failure_terminal, true);
      assert.equal(h.service.calls.length, 0);
      assert.equal(h.env.requests.length, 0);
    } finally {
      await h.close();
    }
  });

  test('D11: a /run body that is not a JSON object, or not JSON at all, is still a terminal failure row with 200', async () => {
    const h = await startHarness({ service: [] });
    try {
      for (const body of ['[1, 2]', 'not json', '"row"']) {
        const res = await h.post<RunResult>('/run', body);
        assert.equal(res.status, 200);
        assert.equal(res.body._ng_failure_terminal, true);
        assert.equal(res.body.reward, 0.0);
      }
    } finally {
      await h.close();
    }
  });

  test('D2 / U28: a failure row keeps the placeholder response plus the partial trajectory, the attempt index and timing', async () => {
    const h = await startHarness({
      service: [toolAsk(functionCall('increment_counter', { count: 1 }, 'c1')), reply.status(500, 'died')],
    });
    try {
      const result = await h.run(basicRow('q', { _ng_task_index: 4, _ng_rollout_index: 0, _ng_attempt_index: 2 }));
      assert.equal(result.response.id, 'remote_agent_failure');
      assert.equal(result.response.output[0]!.type, 'message');
      assert.equal(result._ng_attempt_index, 2);
      assert.equal(result._ng_task_index, 4);
      assert.deepEqual(typesOf(result._ng_partial_response!.output), ['function_call', 'function_call_output']);
      assert.equal(result._ng_partial_response!.output[1]!.output, '{"success":true}');
      assert.equal(typeof result._ng_rollout_duration_secs, 'number');
      assert.equal(typeof result._ng_queue_wait_secs, 'number');
      // Step latencies are evidence too: a failure row carries them without being asked (x-gym-step-latency).
      assert.equal(result._ng_step_latency_secs!.length, 1);
      assert.equal(result._ng_no_persist, undefined);
    } finally {
      await h.close();
    }
  });
});

describe('J. timeouts and concurrency', () => {
  test('D13: the whole-run timeout fails the row at once and aborts the in-flight service call', async () => {
    // 2 s: the seed is long done and the service call open when the deadline fires, however busy the machine.
    const h = await startHarness({ service: () => reply.hang(), config: { run_timeout_secs: 2 } });
    try {
      const started = performance.now();
      const result = await h.run(basicRow());
      const elapsed = performance.now() - started;
      assert.equal(result.error, '/run exceeded run_timeout_secs=2.0s (seed + agent/tool loop + verify)');
      // Answered at the deadline, not when the hanging call ends (never: the harness would give up at POST_TIMEOUT_MS).
      assert.ok(elapsed < POST_TIMEOUT_MS / 2, `the row came after ${elapsed} ms`);
      assert.equal(result._ng_failure_terminal, undefined);
      assert.equal(h.service.calls.length, 1, 'the deadline fired while the service call was open');
      const call = h.service.calls[0]!;
      await eventually(() => call.signal.aborted, { what: 'the in-flight service call is aborted', timeoutMs: 30_000 });
      assert.equal(h.service.inFlight, 0);
      await eventually(() => h.agent.limiter.available === 1 * h.agent.config.concurrency, {
        what: 'the slot is freed',
        timeoutMs: 30_000,
      });
    } finally {
      await h.close();
    }
  });

  test('concurrency 2 with 4 rollouts — never more than 2 at the service, all fail, every slot freed', async () => {
    const gate = gates();
    const h = await startHarness({
      service: async (call) => {
        await gate.wait(call);
        return reply.status(500, 'released');
      },
      config: { concurrency: 2 },
    });
    try {
      const runs = Array.from({ length: 4 }, (_, i) => h.run(basicRow(`task ${i}`)));
      await h.service.waitForCalls(2);
      assert.equal(h.service.inFlight, 2);
      await eventually(() => h.agent.limiter.waiting === 2, { what: 'two rollouts queue', timeoutMs: 30_000 });
      assert.equal(h.service.calls.length, 2);
      for (let i = 0; i < 4; i++) {
        gate.open(i);
        if (i + 2 < 4) await h.service.call(i + 2);
      }
      const results = await Promise.all(runs);
      for (const result of results) assert.match(result.error!, /HTTP 500: released/);
      assert.equal(h.service.maxInFlight, 2);
      assert.equal(h.agent.limiter.available, 2);
    } finally {
      await h.close();
    }
  });

  test('U7 / D13: right after run timeouts the cap still holds — calls at the service never exceed concurrency', async () => {
    // 1.5 s per rollout: each one's seed is done and its service call open before its deadline, however busy the machine.
    const h = await startHarness({ service: () => reply.hang(), config: { concurrency: 2, run_timeout_secs: 1.5 } });
    try {
      const results = await Promise.all(Array.from({ length: 6 }, (_, i) => h.run(basicRow(`t${i}`))));
      for (const result of results) assert.match(result.error!, /run_timeout_secs=1\.5s/);
      assert.equal(h.service.calls.length, 6);
      assert.equal(h.service.maxInFlight, 2);
      await eventually(() => h.agent.limiter.available === 2, { what: 'slots freed', timeoutMs: 30_000 });
    } finally {
      await h.close();
    }
  });

  test('queue wait does not count against run_timeout_secs', async () => {
    // A holds the only slot until B has queued behind it for HOLD_MS; B's own service call then takes HOLD_MS too.
    // Each rollout's own time is HOLD_MS plus milliseconds of work, 1.5 s inside the 4 s run timeout; B's time from its
    // arrival is at least 2 × HOLD_MS, past it (both stalls are lower bounds: a busy machine only lengthens them).
    const HOLD_MS = 2500;
    const RUN_TIMEOUT_SECS = 4;
    const gate = gates();
    const h = await startHarness({
      service: async (call) => {
        if (call.index === 0) await gate.wait(call);
        else await new Promise((resolve) => setTimeout(resolve, HOLD_MS));
        return finalAnswer('ok');
      },
      config: { concurrency: 1, run_timeout_secs: RUN_TIMEOUT_SECS },
    });
    try {
      const a = h.run(basicRow('A'));
      await h.service.call(0);
      const bStarted = performance.now();
      const b = h.run(basicRow('B'));
      await eventually(() => h.agent.limiter.waiting === 1, { what: 'B queues behind A', timeoutMs: 30_000 });
      await new Promise((resolve) => setTimeout(resolve, HOLD_MS));
      gate.open(0);
      const [ra, rb] = await Promise.all([a, b]);
      const bSecs = (performance.now() - bStarted) / 1000;
      assert.equal(ra.reward, 1.0, ra.error);
      assert.equal(rb.reward, 1.0, rb.error);
      assert.equal(h.service.calls.length, 2);
      assert.ok(bSecs > RUN_TIMEOUT_SECS, `B's queue wait and its own time (${bSecs}s) together pass the run timeout`);
    } finally {
      await h.close();
    }
  });

  test('D13 / U7: direct /v1/responses calls share the cap with /run', async () => {
    const gate = gates();
    const h = await startHarness({
      service: async (call) => {
        await gate.wait(call);
        return finalAnswer('ok');
      },
      config: { concurrency: 1 },
    });
    try {
      const run = h.run(basicRow());
      await h.service.call(0);
      const direct = h.post('/v1/responses', { input: 'direct' });
      await eventually(() => h.agent.limiter.waiting === 1, { what: 'the direct call queues', timeoutMs: 30_000 });
      assert.equal(h.service.calls.length, 1);
      gate.open(0);
      gate.open(1);
      await run;
      assert.equal((await direct).status, 200);
      assert.equal(h.service.maxInFlight, 1);
    } finally {
      await h.close();
    }
  });
});

describe('K. re-fed output rows', () => {
  test('stale result keys are stripped on success and never sent to seed or verify', async () => {
    const h = await startHarness({ service: [finalAnswer('ok')] });
    try {
      const result = await h.run({ ...basicRow(), ...STALE });
      assert.equal(result.reward, 1.0);
      for (const key of [
        '_ng_failure_class',
        '_ng_no_persist',
        '_ng_failure_terminal',
        'error',
        '_ng_partial_response',
        '_ng_rollout_duration_secs',
      ]) {
        assert.equal(result[key], undefined, key);
      }
      assert.notEqual(result.response.id, 'stale');
      for (const r of [h.env.to('/seed_session')[0]!, h.env.to('/verify')[0]!]) {
        for (const key of [
          'reward',
          'error',
          '_ng_failure_class',
          '_ng_no_persist',
          '_ng_failure_terminal',
          '_ng_partial_response',
        ]) {
          assert.equal((r.body as Row)[key], undefined, `${r.path} got ${key}`);
        }
      }
      assert.notEqual((h.env.to('/verify')[0]!.body as VerifyRequest).response.id, 'stale');
    } finally {
      await h.close();
    }
  });

  test('stale keys on the failure path — a fresh failure row, still HTTP 200', async () => {
    const h = await startHarness({ service: [reply.status(500, 'remote exploded')] });
    try {
      const res = await h.post<RunResult>('/run', { ...basicRow(), ...STALE });
      assert.equal(res.status, 200);
      const row = res.body;
      assert.equal(row.reward, 0.0);
      assert.equal(row.response.id, 'remote_agent_failure');
      assert.match(row.error!, /remote exploded/);
      assert.equal(row._ng_failure_class, 'remote_agent_error');
      assert.equal(row._ng_no_persist, undefined);
      assert.equal(row._ng_failure_terminal, undefined);
      assert.notEqual(row._ng_partial_response?.id, 'stale-partial');
    } finally {
      await h.close();
    }
  });
});

describe('L. HTTP routes', () => {
  test('/run happy path → 200 with reward 1.0; GET / answers ok', async () => {
    const h = await startHarness({ service: [finalAnswer('ok')] });
    try {
      const res = await h.post<RunResult>('/run', basicRow());
      assert.equal(res.status, 200);
      assert.equal(res.body.reward, 1.0);
      const { request } = await import('../http/client.js');
      const live = await request(`${h.url}/`, { timeoutMs: 30_000 });
      assert.deepEqual(live.json(), { status: 'ok' });
    } finally {
      await h.close();
    }
  });

  test('a /run failure is still 200 with the failure row intact', async () => {
    const h = await startHarness({ service: [reply.status(500, 'nope')] });
    try {
      const res = await h.post<RunResult>('/run', basicRow());
      assert.equal(res.status, 200);
      assert.equal(res.body._ng_failure_class, 'remote_agent_error');
      assert.equal(res.body.reward, 0.0);
      assert.equal(res.body.response.output[0]!.type, 'message');
    } finally {
      await h.close();
    }
  });

  test("/v1/responses is live — the merged trajectory on the caller's environment session", async () => {
    const h = await startHarness({
      service: [
        reply.json(toolAsk(functionCall('increment_counter', { count: 2 }, 'c')), { setCookies: ['svc=secret'] }),
        finalAnswer('done', { id: 'svc_traj' }),
      ],
    });
    try {
      const res = await h.post<ResultResponse>(
        '/v1/responses',
        { input: 'go', tools: [] },
        { cookie: 'session=caller' },
      );
      assert.equal(res.status, 200);
      assert.equal(res.body.id, 'svc_traj');
      assert.deepEqual(typesOf(res.body.output), ['function_call', 'function_call_output', 'message']);
      assert.equal(h.env.to('/increment_counter')[0]!.cookies.session, 'caller');
      assert.ok(res.setCookies.some((c) => c.startsWith(`${ENV_COOKIE}=`)));
      assert.ok(res.setCookies.some((c) => c.startsWith('session=caller')));
      assert.ok(!res.setCookies.some((c) => c.includes('svc=secret')), 'service cookies never leave with the env jar');
    } finally {
      await h.close();
    }
  });

  test('a failure on /v1/responses is HTTP 500 naming the error class; a terminal one says terminal', async () => {
    const h = await startHarness({ service: [reply.status(500, 'kaboom'), { id: 'x', object: 'response' }] });
    try {
      const retryable = await h.post<AgentErrorBody>('/v1/responses', { input: 'go' });
      assert.equal(retryable.status, 500);
      assert.equal(retryable.body.error_class, 'retryable');
      assert.match(retryable.body.error, /HTTP 500: kaboom/);
      const terminal = await h.post<AgentErrorBody>('/v1/responses', { input: 'go' });
      assert.equal(terminal.status, 500);
      assert.equal(terminal.body.error_class, 'terminal');
      assert.match(terminal.body.error, /invalid Responses API object/);
      const invalid = await h.post('/v1/responses', { input: 'go', bogus: 1 });
      assert.equal(invalid.status, 422);
    } finally {
      await h.close();
    }
  });
});

describe('N. aggregate metrics proxy', () => {
  test('/aggregate_metrics is forwarded unchanged to the resources server', async () => {
    const h = await startHarness({ service: [] });
    try {
      const body = {
        verify_responses: [
          {
            ...basicRow(),
            reward: 1.0,
            _ng_task_index: 0,
            _ng_rollout_index: 0,
            response: responseObject([assistantMessage('a')]),
          },
          {
            ...basicRow(),
            reward: 0.0,
            _ng_task_index: 0,
            _ng_rollout_index: 1,
            response: responseObject([assistantMessage('b')]),
          },
        ],
      };
      const viaAgent = await h.post<Row>('/aggregate_metrics', body);
      const direct = await (
        await import('../http/client.js')
      ).callInternal(`${h.env.url}/aggregate_metrics`, {
        json: body,
        timeoutMs: 30_000,
      });
      assert.equal(viaAgent.status, 200);
      assert.ok('key_metrics' in viaAgent.body);
      assert.deepEqual(viaAgent.body, direct.json());
      assert.deepEqual(h.env.to('/aggregate_metrics')[0]!.body, body);
    } finally {
      await h.close();
    }
  });

  test('the proxy is bounded — a hanging resources server gives a 500 after the bound, not a hang', async () => {
    const app = new App().post(
      '/aggregate_metrics',
      (req) => new Promise((resolve) => req.signal.addEventListener('abort', () => resolve({}))),
    );
    const env = await listenEnv(app, 'hanging_env');
    const h = await startHarness({ service: [], env, agent: { aggregateTimeoutSecs: 0.2 } });
    try {
      const started = performance.now();
      const res = await h.post<AgentErrorBody>('/aggregate_metrics', { verify_responses: [] });
      const elapsed = performance.now() - started;
      // Answered at the 0.2 s bound, not when the hang ends (never: the harness would give up at POST_TIMEOUT_MS).
      assert.ok(elapsed < POST_TIMEOUT_MS / 2, `the answer came after ${elapsed} ms`);
      assert.equal(res.status, 500);
      assert.match(res.body.error, /\/aggregate_metrics on the resources server 'hanging_env' .* failed: timed out/);
    } finally {
      await h.close();
    }
  });
});

describe('O. logging', () => {
  test('warnings are throttled — 10 usage-less rollouts print exactly 5 "no usage" lines', async () => {
    const h = await startHarness({ service: () => finalAnswer('ok', { usage: undefined }) });
    try {
      for (let i = 0; i < 10; i++) await h.run(basicRow());
      assert.equal(h.logs.filter((line) => line.includes('no usage')).length, 5);
    } finally {
      await h.close();
    }
  });

  test('failure lines read "[remote_agent] rollout failed (failure #n): …", 1–5 then every 100th', () => {
    const lines: string[] = [];
    const log = new AgentLog((line) => lines.push(line));
    for (let i = 0; i < 250; i++) log.rolloutFailed(`boom ${i + 1}`);
    assert.deepEqual(
      lines.map((line) => line.replace(/: boom \d+$/, '')),
      [1, 2, 3, 4, 5, 100, 200].map((n) => `[remote_agent] rollout failed (failure #${n})`),
    );
    assert.equal(isThrottledOccurrencePrinted(101), false);
  });

  test('a failed rollout prints its failure line through the agent', async () => {
    const h = await startHarness({ service: [reply.status(500, 'kaboom')] });
    try {
      await h.run(basicRow());
      assert.ok(h.logs.includes('[remote_agent] rollout failed (failure #1): agent loop failed: HTTP 500: kaboom'));
    } finally {
      await h.close();
    }
  });
});
