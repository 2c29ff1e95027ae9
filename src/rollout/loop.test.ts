import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { z } from 'zod';
import { App } from '../http/server.js';
import { tool } from '../server/resources-server.js';
import {
  assistantMessage,
  finalAnswer,
  fullUsage,
  functionCall,
  functionCallOutput,
  reasoningItem,
  responseObject,
  toolAsk,
  toolOutputsIn,
} from '../testing/index.js';
import { checkArguments, toolNameRefusal } from './resources-client.js';
import { planStep } from './rollout.js';
import { basicRow, listenEnv, startHarness, typesOf, type EnvRequest } from '../../test/support/remote-agent.js';

const inc = (count: number, id?: string) => functionCall('increment_counter', { count }, id);

describe('C. loop semantics', () => {
  test('a final message ends the loop — one service call, then verify; order seed → loop → verify', async () => {
    const h = await startHarness({ service: [finalAnswer('42')] });
    try {
      const result = await h.run(basicRow());
      assert.equal(result.reward, 1.0);
      assert.equal(h.service.calls.length, 1);
      assert.deepEqual(
        h.env.requests.map((r) => r.path),
        ['/seed_session', '/verify'],
      );
      assert.equal(result._ng_failure_class, undefined);
    } finally {
      await h.close();
    }
  });

  test('an unpaired call is executed once with the parsed arguments, on the session, and the service is called again', async () => {
    const h = await startHarness({ service: [toolAsk(inc(3, 'c1')), finalAnswer('done')] });
    try {
      await h.run(basicRow());
      const tools = h.env.to('/increment_counter');
      assert.equal(tools.length, 1);
      assert.deepEqual(tools[0]!.body, { count: 3 });
      assert.equal(h.service.calls.length, 2);
    } finally {
      await h.close();
    }
  });

  test('paired call+output records pass through untouched; only the unpaired call runs', async () => {
    const own = functionCall('web_search', { q: 'x' }, 'call_a');
    const ownOutput = functionCallOutput('call_a', 'search results');
    const h = await startHarness({ service: [responseObject([own, ownOutput, inc(1, 'call_b')]), finalAnswer('ok')] });
    try {
      const result = await h.run(basicRow());
      assert.equal(h.env.to('/web_search').length, 0);
      assert.equal(h.env.to('/increment_counter').length, 1);
      assert.deepEqual(typesOf(result.response.output), [
        'function_call',
        'function_call_output',
        'function_call',
        'function_call_output',
        'message',
      ]);
      assert.deepEqual(result.response.output[1], ownOutput);
      assert.equal(result.response.output[3]!.call_id, 'call_b');
    } finally {
      await h.close();
    }
  });

  test('pairing is position-insensitive within a response — [call X, output X, call X] executes nothing', () => {
    const plan = planStep([inc(1, 'X'), functionCallOutput('X', 'mine'), inc(2, 'X'), assistantMessage('done')]);
    assert.deepEqual(plan.asks, []);
    assert.equal(plan.hasAssistantMessage, true);
    const outputFirst = planStep([functionCallOutput('Y', 'mine'), inc(1, 'Y')]);
    assert.deepEqual(outputFirst.asks, []);
  });

  test('duplicate call_ids collapse to the last arguments, keeping the first position', async () => {
    const h = await startHarness({
      service: [
        toolAsk(inc(1, 'dup'), functionCall('get_counter_value', {}, 'other'), inc(3, 'dup')),
        finalAnswer('ok'),
      ],
    });
    try {
      const result = await h.run(basicRow());
      assert.equal(result.reward, 1.0);
      assert.deepEqual(
        h.env.requests.filter((r) => r.path !== '/seed_session' && r.path !== '/verify').map((r) => [r.path, r.body]),
        [
          ['/increment_counter', { count: 3 }],
          ['/get_counter_value', {}],
        ],
      );
      // Both call items stay; one output per call_id.
      assert.deepEqual(typesOf(result.response.output), [
        'function_call',
        'function_call',
        'function_call',
        'function_call_output',
        'function_call_output',
        'message',
      ]);
    } finally {
      await h.close();
    }
  });

  test('U32: several asks run sequentially in order of first appearance, outputs after the step items, one re-post', async () => {
    const h = await startHarness({
      service: [toolAsk(inc(1, 'a'), inc(2, 'b'), functionCall('get_counter_value', {}, 'c')), finalAnswer('6')],
    });
    try {
      await h.run(basicRow());
      assert.equal(h.service.calls.length, 2);
      const outputs = toolOutputsIn(h.service.calls[1]!.body.input);
      assert.deepEqual(
        outputs.map((o) => [o.call_id, o.output]),
        [
          ['a', '{"success":true}'],
          ['b', '{"success":true}'],
          ['c', '{"count":6}'],
        ],
      );
      assert.deepEqual(typesOf(h.service.calls[1]!.body.input).slice(-3), Array(3).fill('function_call_output'));
    } finally {
      await h.close();
    }
  });

  test('mixed outputs — reasoning, messages and paired records are kept and echoed; only unpaired calls run', async () => {
    const items = [
      reasoningItem('let me think'),
      assistantMessage('working on it'),
      functionCall('lookup', {}, 'p'),
      functionCallOutput('p', 'found'),
      inc(4, 'u'),
    ];
    const h = await startHarness({ service: [responseObject(items), finalAnswer('ok')] });
    try {
      await h.run(basicRow());
      const echoed = h.service.calls[1]!.body.input;
      assert.deepEqual(echoed.slice(1, 6), items);
      assert.deepEqual(echoed[6], { type: 'function_call_output', call_id: 'u', output: '{"success":true}' });
      assert.equal(h.env.to('/lookup').length, 0);
    } finally {
      await h.close();
    }
  });

  test('U10: a message does not end the loop while asks remain — the call runs and the service is called again', async () => {
    const h = await startHarness({
      service: [responseObject([assistantMessage('partial answer'), inc(1)]), finalAnswer('ok')],
    });
    try {
      const result = await h.run(basicRow());
      assert.equal(h.service.calls.length, 2);
      assert.equal(h.env.to('/increment_counter').length, 1);
      assert.deepEqual(typesOf(result.response.output), [
        'message',
        'function_call',
        'function_call_output',
        'message',
      ]);
    } finally {
      await h.close();
    }
  });

  test("U11: incomplete_details stops before running that response's asks; verify sees it and keeps incomplete_details", async () => {
    const truncated = responseObject([inc(1, 'dangling')], {
      status: 'incomplete',
      incomplete_details: { reason: 'max_output_tokens' },
    });
    const h = await startHarness({ service: [toolAsk(inc(2, 'first')), truncated] });
    try {
      const result = await h.run(basicRow());
      assert.equal(result._ng_failure_class, undefined);
      assert.equal(result.reward, 1.0);
      assert.equal(h.service.calls.length, 2);
      assert.deepEqual(
        h.env.to('/increment_counter').map((r) => r.body),
        [{ count: 2 }],
      );
      assert.deepEqual(result.response.incomplete_details, { reason: 'max_output_tokens' });
      assert.deepEqual(typesOf(result.response.output), ['function_call', 'function_call_output', 'function_call']);
    } finally {
      await h.close();
    }
  });

  test("max_steps bounds the loop without failing; the last step's tools still run", async () => {
    const h = await startHarness({ service: () => toolAsk(inc(1)), config: { max_steps: 2 } });
    try {
      const result = await h.run(basicRow());
      assert.equal(h.service.calls.length, 2);
      assert.equal(result._ng_failure_class, undefined);
      assert.equal(h.env.to('/increment_counter').length, 2);
      assert.equal(h.env.to('/verify').length, 1);
      assert.equal(result.response.output.at(-1)!.type, 'function_call_output');
    } finally {
      await h.close();
    }
  });

  test("the final response is the last response with every step's items + tool outputs and summed usage", async () => {
    const h = await startHarness({
      service: [
        toolAsk(inc(1, 'a')),
        finalAnswer('done', { id: 'traj_1', model: 'svc-model', metadata: { run: 'x' } }),
      ],
    });
    try {
      const result = await h.run(basicRow());
      assert.equal(result.response.id, 'traj_1');
      assert.equal(result.response.model, 'svc-model');
      assert.deepEqual(result.response.metadata, { run: 'x' });
      assert.deepEqual(typesOf(result.response.output), ['function_call', 'function_call_output', 'message']);
      assert.deepEqual(result.response.usage, fullUsage(20, 10));
    } finally {
      await h.close();
    }
  });

  const noProgress: Array<[string, unknown[]]> = [
    ['U8: empty output', []],
    ['U9: reasoning only', [reasoningItem('hmm')]],
    ['U9: paired records only', [functionCall('own', {}, 'p'), functionCallOutput('p', 'x')]],
    [
      'U9: hosted-tool items only',
      [{ type: 'web_search_call', id: 'ws_1', action: { type: 'search' }, status: 'completed' }],
    ],
    ['U12: a user-role message is not a final answer', [{ type: 'message', role: 'user', content: 'hello?' }]],
    ['U16: an orphan function_call_output alone', [functionCallOutput('nobody', 'x')]],
  ];
  for (const [label, output] of noProgress) {
    test(`D4 / ${label} → fails at once, non-terminal, "neither a tool call nor a final message"`, async () => {
      const h = await startHarness({ service: () => responseObject(output) });
      try {
        const result = await h.run(basicRow());
        assert.equal(h.service.calls.length, 1);
        assert.equal(result._ng_failure_class, 'remote_agent_error');
        assert.equal(result._ng_failure_terminal, undefined);
        assert.match(result.error!, /returned neither a tool call nor a final message/);
        assert.equal(h.env.to('/verify').length, 0);
      } finally {
        await h.close();
      }
    });
  }

  test('U16: an orphan function_call_output next to a final message passes through, nothing executed', async () => {
    const h = await startHarness({
      service: [responseObject([functionCallOutput('nobody', 'x'), assistantMessage('ok')])],
    });
    try {
      const result = await h.run(basicRow());
      assert.equal(result.reward, 1.0);
      assert.deepEqual(
        h.env.requests.map((r) => r.path),
        ['/seed_session', '/verify'],
      );
    } finally {
      await h.close();
    }
  });

  test('U15: a call_id reused in a later response is executed again', async () => {
    const h = await startHarness({ service: [toolAsk(inc(1, 'same')), toolAsk(inc(2, 'same')), finalAnswer('ok')] });
    try {
      await h.run(basicRow());
      assert.deepEqual(
        h.env.to('/increment_counter').map((r) => r.body),
        [{ count: 1 }, { count: 2 }],
      );
    } finally {
      await h.close();
    }
  });

  const statusFailures: Array<[string, Record<string, unknown>, boolean, RegExp]> = [
    [
      'status failed',
      { status: 'failed', error: { code: 'server_error', message: 'model crashed' } },
      false,
      /server_error: model crashed/,
    ],
    ['status cancelled', { status: 'cancelled' }, false, /status cancelled/],
    [
      'an error object',
      { status: 'completed', error: { code: 'rate_limit_exceeded', message: 'slow down' } },
      false,
      /slow down/,
    ],
    ['status in_progress (background)', { status: 'in_progress' }, true, /background responses are not supported/],
    ['status queued (background)', { status: 'queued' }, true, /background responses are not supported/],
  ];
  for (const [label, extra, terminal, text] of statusFailures) {
    test(`U13: ${label} → ${terminal ? 'terminal' : 'non-terminal'} failure quoting the service`, async () => {
      const h = await startHarness({ service: [responseObject([assistantMessage('?')], extra)] });
      try {
        const result = await h.run(basicRow());
        assert.equal(result._ng_failure_class, 'remote_agent_error');
        assert.equal(result._ng_failure_terminal, terminal ? true : undefined);
        assert.match(result.error!, text);
        assert.equal(h.env.to('/verify').length, 0);
      } finally {
        await h.close();
      }
    });
  }
});

describe('D. tool execution', () => {
  test('an unknown tool name goes to the resources server and its 404 Not Found text comes back', async () => {
    const h = await startHarness({
      service: [toolAsk(functionCall('web_search', { q: 'x' }, 'w')), finalAnswer('ok')],
    });
    try {
      const result = await h.run(basicRow());
      assert.equal(result.reward, 1.0);
      assert.equal(h.env.to('/web_search').length, 1);
      const [output] = toolOutputsIn(h.service.calls[1]!.body.input);
      assert.match(output!.output, /Not Found/);
    } finally {
      await h.close();
    }
  });

  test('malformed JSON arguments → an error output naming the decoder error, no tool call, rollout continues', async () => {
    const h = await startHarness({
      service: [toolAsk(functionCall('increment_counter', 'not json', 'bad')), finalAnswer('ok')],
    });
    try {
      const result = await h.run(basicRow());
      assert.equal(result.reward, 1.0);
      assert.equal(h.env.to('/increment_counter').length, 0);
      const [output] = toolOutputsIn(h.service.calls[1]!.body.input);
      const parsed = JSON.parse(output!.output) as { error: string };
      assert.match(parsed.error, /^Invalid tool call arguments: SyntaxError/);
    } finally {
      await h.close();
    }
  });

  const oddArguments: Array<[string, string, RegExp]> = [
    ['empty string', '', /empty/],
    ['an array', '[1]', /got an array/],
    ['a number', '3', /got a number/],
    ['null', 'null', /got null/],
  ];
  for (const [label, args, reason] of oddArguments) {
    test(`D6 / U18: arguments that are ${label} → Invalid tool call arguments, environment not contacted`, async () => {
      const h = await startHarness({
        service: [toolAsk(functionCall('increment_counter', args, 'x')), finalAnswer('ok')],
      });
      try {
        await h.run(basicRow());
        assert.equal(h.env.to('/increment_counter').length, 0);
        const [output] = toolOutputsIn(h.service.calls[1]!.body.input);
        const parsed = JSON.parse(output!.output) as { error: string };
        assert.match(parsed.error, /^Invalid tool call arguments: /);
        assert.match(parsed.error, reason);
      } finally {
        await h.close();
      }
    });
  }

  test('tool results are the body text verbatim, whatever the status (422 for a wrong argument type)', async () => {
    const h = await startHarness({
      service: [toolAsk(inc(1, 'ok'), functionCall('increment_counter', { count: 'two' }, 'bad')), finalAnswer('ok')],
    });
    try {
      await h.run(basicRow());
      const outputs = toolOutputsIn(h.service.calls[1]!.body.input);
      assert.equal(outputs[0]!.output, '{"success":true}');
      assert.match(outputs[1]!.output, /^\{"detail":\[.*"count"/);
    } finally {
      await h.close();
    }
  });

  test('tools run on the seeded session — initial 3, +1, +2, get → the service is fed "count":6', async () => {
    const h = await startHarness({
      service: [toolAsk(inc(1)), toolAsk(inc(2)), toolAsk(functionCall('get_counter_value')), finalAnswer('6')],
    });
    try {
      await h.run(basicRow());
      const outputs = toolOutputsIn(h.service.calls[3]!.body.input);
      assert.equal(outputs.at(-1)!.output, '{"count":6}');
    } finally {
      await h.close();
    }
  });

  const refusedNames = [
    'verify',
    'seed_session',
    'aggregate_metrics',
    'reverify_mode',
    '../verify',
    'a/b',
    'x?y=1',
    'x#y',
    '..',
    '.',
    'a'.repeat(129),
    'naïve',
  ];
  test('D5 / U17: names that are not plain identifiers or that are reserved routes never reach the environment', async () => {
    const calls = refusedNames.map((name, i) => functionCall(name, {}, `r${i}`));
    const h = await startHarness({ service: [toolAsk(...calls), finalAnswer('ok')] });
    try {
      const result = await h.run(basicRow());
      assert.equal(result.reward, 1.0);
      assert.deepEqual(
        h.env.requests.map((r) => r.path),
        ['/seed_session', '/verify'],
      );
      const outputs = toolOutputsIn(h.service.calls[1]!.body.input);
      assert.equal(outputs.length, refusedNames.length);
      for (const output of outputs)
        assert.match((JSON.parse(output.output) as { error: string }).error, /is not available/);
    } finally {
      await h.close();
    }
  });

  test('D5: a plain name with dots, dashes and digits is allowed', () => {
    assert.equal(toolNameRefusal('tool.v2-beta_3'), undefined);
    assert.equal(toolNameRefusal('a'.repeat(128)), undefined);
    assert.match(toolNameRefusal('verify')!, /reserves/);
  });

  test('D6: checkArguments accepts exactly JSON objects', () => {
    assert.deepEqual(checkArguments('{"a":1}'), { ok: true });
    assert.deepEqual(checkArguments(' {} '), { ok: true });
    assert.equal(checkArguments('"s"').ok, false);
    assert.equal(checkArguments('true').ok, false);
  });

  test('U3: a non-UTF-8 tool body is decoded with replacement and fed back, not a rollout failure', async () => {
    const app = new App()
      .post('/seed_session', () => ({ body: {} }))
      .post('/binary_tool', () => ({
        raw: Buffer.from([0x7b, 0x22, 0x78, 0x22, 0x3a, 0xff, 0xfe, 0x7d]),
        contentType: 'application/json',
      }))
      .post('/verify', () => ({ body: { reward: 1.0 } }));
    const env = await listenEnv(app, 'binary_env');
    const h = await startHarness({ service: [toolAsk(functionCall('binary_tool', {}, 'b')), finalAnswer('ok')], env });
    try {
      const result = await h.run(basicRow());
      assert.equal(result.reward, 1.0);
      assert.equal(toolOutputsIn(h.service.calls[1]!.body.input)[0]!.output, '{"x":\uFFFD\uFFFD}');
    } finally {
      await h.close();
    }
  });

  test('D12 / U19: an unreachable environment during a tool call fails at once, naming the resources server and its URL', async () => {
    const requests: EnvRequest[] = [];
    const app = new App()
      .post('/seed_session', () => ({ body: {} }))
      .post('/verify', () => ({ body: { reward: 1.0 } }));
    const env = await listenEnv(app, 'flaky_env', requests);
    const h = await startHarness({
      env,
      // The contrast: a rollout that waited for its run timeout would answer after 60 s.
      config: { run_timeout_secs: 60 },
      service: async () => {
        await env.close(); // the environment goes down between seed and the tool call
        return toolAsk(inc(1));
      },
    });
    try {
      const started = performance.now();
      const result = await h.run(basicRow());
      const elapsed = performance.now() - started;
      assert.ok(elapsed < 30_000, `must not wait for the run timeout (answered after ${elapsed} ms)`);
      assert.equal(result._ng_failure_class, 'remote_agent_error');
      assert.equal(result._ng_failure_terminal, undefined);
      assert.match(result.error!, /could not reach the resources server 'flaky_env'/);
      assert.ok(result.error!.includes(env.url), result.error);
    } finally {
      await h.close();
    }
  });
});

describe('F. usage', () => {
  test('usage accumulates across steps; a null detail makes the sum null; steps without usage are skipped', async () => {
    const h = await startHarness({
      service: [
        responseObject([inc(1)], { usage: fullUsage(10, 5, { cached: 2, reasoning: 1 }) }),
        responseObject([inc(1)], { usage: fullUsage(10, 5, { cached: 3, reasoning: null }) }),
        responseObject([assistantMessage('ok')], { usage: fullUsage(1, 1, { cached: 1, reasoning: 4 }) }),
      ],
    });
    try {
      const result = await h.run(basicRow());
      assert.deepEqual(result.response.usage, {
        input_tokens: 21,
        input_tokens_details: { cached_tokens: 6 },
        output_tokens: 11,
        output_tokens_details: { reasoning_tokens: null },
        total_tokens: 32,
      });
    } finally {
      await h.close();
    }
  });

  test('omitted usage → success with usage null and a "no usage" warning; a clean trajectory prints no WARNING', async () => {
    const h = await startHarness({
      service: [responseObject([assistantMessage('ok')], { usage: undefined }), finalAnswer('ok')],
    });
    try {
      const bare = await h.run(basicRow());
      assert.equal(bare.reward, 1.0);
      assert.equal(bare._ng_failure_class, undefined);
      assert.equal(bare.response.usage, null);
      assert.equal(h.logs.filter((l) => /WARNING/.test(l) && /no usage/.test(l)).length, 1);
      h.logs.length = 0;
      await h.run(basicRow());
      assert.deepEqual(
        h.logs.filter((l) => l.includes('WARNING')),
        [],
      );
    } finally {
      await h.close();
    }
  });

  test('U25: mixed usage reporting warns; the sum covers the reporting steps', async () => {
    const h = await startHarness({
      service: [responseObject([inc(1)], { usage: undefined }), finalAnswer('ok')],
    });
    try {
      const result = await h.run(basicRow());
      assert.deepEqual(result.response.usage, fullUsage(10, 5));
      assert.equal(h.logs.filter((l) => /WARNING.*usage on 1 of 2 steps/.test(l)).length, 1);
    } finally {
      await h.close();
    }
  });

  test('partial usage is an invalid Responses object → terminal', async () => {
    const h = await startHarness({
      service: [finalAnswer('ok', { usage: { input_tokens: 1, output_tokens: 1, total_tokens: 2 } })],
    });
    try {
      const result = await h.run(basicRow());
      assert.equal(result._ng_failure_terminal, true);
      assert.match(result.error!, /invalid Responses API object: usage\.input_tokens_details: required/);
    } finally {
      await h.close();
    }
  });
});

// The recording env also serves extra tools given by a test; keep one such use to pin the option.
describe('harness', () => {
  test('extra environment tools are served next to the counter tools', async () => {
    const h = await startHarness({
      service: [toolAsk(functionCall('echo', { a: 1 }, 'e')), finalAnswer('ok')],
      env: { tools: { echo: tool(z.looseObject({}), (args) => ({ echoed: args })) } },
    });
    try {
      await h.run(basicRow());
      assert.equal(toolOutputsIn(h.service.calls[1]!.body.input)[0]!.output, '{"echoed":{"a":1}}');
    } finally {
      await h.close();
    }
  });
});
