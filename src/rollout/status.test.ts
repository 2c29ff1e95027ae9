import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { z } from 'zod';
import { STEP_LATENCY_HEADER } from '../contract/gym-wire.js';
import { request } from '../http/client.js';
import { tool } from '../server/resources-server.js';
import { finalAnswer, functionCall, reply, toolAsk } from '../testing/index.js';
import type { AgentStatusBody } from './status.js';
import { basicRow, startHarness, type Harness } from '../../test/support/remote-agent.js';
import { eventually, gate } from '../../test/support/wait.js';

const harnesses: Harness[] = [];
after(async () => {
  for (const harness of harnesses) await harness.close();
});

async function status(harness: Harness): Promise<AgentStatusBody> {
  const res = await request(`${harness.url}/status`, { method: 'GET', timeoutMs: 30_000 });
  assert.equal(res.status, 200);
  return res.json() as AgentStatusBody;
}

/** Polls GET /status until `check` holds (bounded); returns that answer. */
async function statusWhen(
  harness: Harness,
  what: string,
  check: (body: AgentStatusBody) => boolean,
): Promise<AgentStatusBody> {
  let body: AgentStatusBody | undefined;
  await eventually(async () => check((body = await status(harness))), {
    what: () => `${what}; last /status: ${JSON.stringify(body)}`,
    timeoutMs: 30_000,
    intervalMs: 20,
  });
  return body!;
}

const stageOf = (body: AgentStatusBody, task: number) => body.rollouts.find((r) => r.task_index === task);

/**
 * How long task 0 waits after its 429, in seconds: the stage the test must catch lasts this long, so it is long enough
 * for a poll of /status to land in it on a busy machine (each poll takes milliseconds).
 */
const RETRY_AFTER_SECS = 5;

test('GET /status follows each in-flight rollout: queued, retrying_overload, running_tool NAME, verifying; then it is gone', async () => {
  const toolGate = gate();
  const verifyGate = gate();
  const harness = await startHarness({
    config: { concurrency: 1 },
    service: [
      reply.status(429, 'busy', { headers: { 'retry-after': String(RETRY_AFTER_SECS) } }),
      toolAsk(functionCall('slow_lookup', {}, 'c1')),
      finalAnswer('42'),
      finalAnswer('42'),
    ],
    env: {
      tools: { slow_lookup: tool(z.looseObject({}), async () => (await toolGate.opened, { found: true })) },
      verify: async (body) => {
        if (body._ng_task_index === 0) await verifyGate.opened;
        return { reward: 1 };
      },
    },
  });
  harnesses.push(harness);
  // Task 0 is sent as tsgym's collector sends it, asking for step latencies; task 1 as any other caller.
  const first = harness
    .post('/run', basicRow('q', { _ng_task_index: 0, _ng_rollout_index: 0 }), { [STEP_LATENCY_HEADER]: '1' })
    .then((res) => res.body as Record<string, unknown>);
  const second = harness.run(basicRow('q', { _ng_task_index: 1, _ng_rollout_index: 0, _ng_attempt_index: 2 }));

  const overloaded = await statusWhen(
    harness,
    'task 0 retrying after the 429, task 1 arrived',
    (body) => stageOf(body, 0)?.stage === 'retrying_overload' && stageOf(body, 1) !== undefined,
  );
  assert.equal(overloaded.in_flight, 2);
  assert.equal(overloaded.truncated, 0);
  // Task 1 waits for the single slot; its attempt is reported as sent.
  assert.deepEqual(
    { ...stageOf(overloaded, 1), elapsed_s: 0, since_progress_s: 0 },
    {
      task_index: 1,
      rollout_index: 0,
      attempt: 2,
      stage: 'queued',
      step: 0,
      tool: null,
      elapsed_s: 0,
      since_progress_s: 0,
    },
  );
  assert.equal(stageOf(overloaded, 0)!.step, 1);

  const tooling = await statusWhen(
    harness,
    'task 0 running its tool',
    (body) => stageOf(body, 0)?.stage === 'running_tool',
  );
  assert.equal(stageOf(tooling, 0)!.tool, 'slow_lookup');
  assert.equal(stageOf(tooling, 0)!.step, 1);
  toolGate.open();
  await statusWhen(harness, 'task 0 verifying', (body) => stageOf(body, 0)?.stage === 'verifying');
  verifyGate.open();

  const [row0, row1] = await Promise.all([first, second]);
  assert.equal(row0.reward, 1);
  assert.equal(row1.reward, 1);
  assert.deepEqual(await status(harness), { in_flight: 0, truncated: 0, rollouts: [] });
  // Step 1 includes the overload wait (Retry-After); step 2 answered at once.
  const latencies = row0._ng_step_latency_secs as number[];
  assert.equal(latencies.length, 2);
  assert.ok(latencies[0]! >= RETRY_AFTER_SECS, `step 1 took ${latencies[0]}s`);
  // Not asked (as by a NeMo Gym collector): no latencies; the result is the verify response (C4, run.test.ts).
  assert.equal('_ng_step_latency_secs' in row1, false);
});
