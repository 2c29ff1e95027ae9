import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { ConversationItem, DecideContext, FunctionTool } from '../../src/service/index.js';
import {
  assertAgentCheckPasses,
  DIST_EXAMPLES,
  runCounterRollouts,
  spawnService,
  trajectoryTypes,
} from '../../test/support/examples.js';
import { createCounterPlanner, parseCounterTask, startCounterPlannerService } from './index.js';

const INCREMENT: FunctionTool = { type: 'function', name: 'increment_counter', parameters: {} };
const GET: FunctionTool = { type: 'function', name: 'get_counter_value', parameters: {} };
const ctx = {} as DecideContext;
const task: ConversationItem = { role: 'user', content: 'add 4 then add 5 then get the count' };
const call = (id: string, name: string, args: unknown): ConversationItem => ({
  type: 'function_call',
  call_id: id,
  name,
  arguments: JSON.stringify(args),
});
const result = (id: string, output: string): ConversationItem => ({
  type: 'function_call_output',
  call_id: id,
  output,
});

describe('counter planner (deterministic, no model)', () => {
  test('reads the amounts out of the task text', () => {
    assert.deepEqual(parseCounterTask('add 1 then add 2 then get the count').adds, [1, 2]);
    assert.deepEqual(parseCounterTask('Add -3 then ADD 10').adds, [-3, 10]);
    assert.deepEqual(parseCounterTask('get the count').adds, []);
  });

  test('batched: both increments at once, then the count, then the answer', async () => {
    const plan = createCounterPlanner();
    assert.deepEqual(await plan([task], [INCREMENT, GET], ctx), {
      toolCalls: [
        { name: 'increment_counter', arguments: { count: 4 } },
        { name: 'increment_counter', arguments: { count: 5 } },
      ],
    });
    const afterIncrements = [
      task,
      call('a', 'increment_counter', { count: 4 }),
      call('b', 'increment_counter', { count: 5 }),
      result('a', '{"success":true}'),
      result('b', '{"success":true}'),
    ];
    assert.deepEqual(await plan(afterIncrements, [INCREMENT, GET], ctx), {
      toolCalls: [{ name: 'get_counter_value', arguments: {} }],
    });
    const done = [...afterIncrements, call('c', 'get_counter_value', {}), result('c', '{"count":15}')];
    assert.deepEqual(await plan(done, [INCREMENT, GET], ctx), { final: '15' });
  });

  test('incremental: one increment per call', async () => {
    const plan = createCounterPlanner({ incremental: true });
    assert.deepEqual(await plan([task], [INCREMENT, GET], ctx), {
      toolCalls: [{ name: 'increment_counter', arguments: { count: 4 } }],
    });
    const afterOne = [task, call('a', 'increment_counter', { count: 4 }), result('a', '{"success":true}')];
    assert.deepEqual(await plan(afterOne, [INCREMENT, GET], ctx), {
      toolCalls: [{ name: 'increment_counter', arguments: { count: 5 } }],
    });
  });

  test('asks only for declared tools', async () => {
    const plan = createCounterPlanner();
    assert.deepEqual(await plan([task], [GET], ctx), { toolCalls: [{ name: 'get_counter_value', arguments: {} }] });
    assert.match(((await plan([task], [], ctx)) as { final: string }).final, /does not declare get_counter_value/);
  });
});

describe('counter planner service', () => {
  for (const incremental of [false, true]) {
    test(`passes gym agent check (${incremental ? 'incremental' : 'batched'})`, async () => {
      const service = await startCounterPlannerService({ port: 0, incremental });
      try {
        assert.match(service.brainName, /^counter-planner \(deterministic, no model/);
        await assertAgentCheckPasses(service.url);
      } finally {
        await service.close();
      }
    });
  }

  test('scores 5/5 on the counter dataset through the remote agent and the real counter environment', async (t) => {
    const service = await startCounterPlannerService({ port: 0 });
    try {
      const results = await runCounterRollouts(service.url);
      if ('unavailable' in results) return t.skip(results.unavailable);
      assert.deepEqual(results.rewards, [1, 1, 1, 1, 1]);
      assert.deepEqual(trajectoryTypes(results.rows[0]!), [
        'function_call',
        'function_call',
        'function_call_output',
        'function_call_output',
        'function_call',
        'function_call_output',
        'message',
      ]);
    } finally {
      await service.close();
    }
  });

  test('runs with one command: node dist/examples/counter-planner/service.js --port 0', async () => {
    const service = await spawnService(process.execPath, [
      `${DIST_EXAMPLES}counter-planner/service.js`,
      '--port',
      '0',
      '--incremental',
    ]);
    try {
      assert.match(service.output(), /counter-planner \(deterministic, no model, incremental\) listening on/);
      await assertAgentCheckPasses(service.url);
    } finally {
      await service.close();
    }
  });

  test('an unknown brain, or an openai brain without its model server, is a config error', async () => {
    await assert.rejects(startCounterPlannerService({ brain: 'openai' }), /brain 'openai' needs the model server/);
    await assert.rejects(startCounterPlannerService({ brain: 'gpt' as never }), /unknown brain 'gpt'/);
  });

  test('a local brain without a model file starts, for calls that carry a model URL (local-llm/model-url.test.ts)', async () => {
    const service = await startCounterPlannerService({ brain: 'local' });
    try {
      assert.equal(service.brainName, "local (no model file: needs each call's model URL from Gym)");
    } finally {
      await service.close();
    }
  });
});
