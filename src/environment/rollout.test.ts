import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { listenEnv, startHarness } from '../../test/support/remote-agent.js';
import { finalAnswer, functionCall, toolAsk, toolOutputsIn, type ServiceCall } from '../testing/index.js';
import { defineEnvironment, EnvironmentServer, z } from './index.js';

/**
 * A kit environment under tsgym's real remote agent: seed, the service's tool asks run on the session, verify. The
 * rollout row is the verify response (C4): extras in, the dropped answer key out; the session is gone after verify.
 */

const lock = defineEnvironment({
  name: 'lock',
  seedRow: z.looseObject({ code: z.string() }),
  createState: (row) => ({ code: row.code, tries: 0, open: false }),
  tools: (tool) => ({
    try_code: tool({
      description: 'Try a code on the lock.',
      input: z.object({ code: z.string() }),
      run: ({ code }, { state }) => {
        state.tries += 1;
        state.open ||= code === state.code;
        return { open: state.open };
      },
    }),
  }),
  verify: ({ state }) => ({ reward: state?.open ? 1 : 0, tries: state?.tries ?? 0 }),
  dropFields: ['code'],
});

describe('a kit environment under the remote agent', () => {
  it('runs the tools on the seeded session and returns the verify response as the row', async () => {
    const server = new EnvironmentServer(lock, { instanceName: 'lock' });
    const env = await listenEnv(server.app, 'lock');
    const guesses = ['1111', '4242'];
    const h = await startHarness({
      service: (call: ServiceCall) => {
        const outputs = toolOutputsIn(call.body.input);
        if (outputs.some((output) => output.output === '{"open":true}')) return finalAnswer('opened');
        return toolAsk(functionCall('try_code', { code: guesses[outputs.length] }));
      },
      env,
    });
    try {
      const row = await h.run({
        responses_create_params: { input: [{ role: 'user', content: 'open the lock' }], tools: lock.toolSchemas },
        code: '4242',
        _ng_task_index: 0,
        _ng_rollout_index: 0,
      });
      assert.equal(row.reward, 1, JSON.stringify(row));
      assert.equal(row.tries, 2);
      assert.equal(row.code, undefined, 'the answer key stays out of the rollout row');
      assert.equal(row._ng_task_index, 0);
      assert.deepEqual(
        (row.response as { output: Array<{ type: string }> }).output.map((item) => item.type),
        ['function_call', 'function_call_output', 'function_call', 'function_call_output', 'message'],
      );
      assert.equal(server.sessions.size, 0, 'the session was dropped at verify');
    } finally {
      await h.close();
      await server.close();
    }
  });
});
