import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createCounterServer } from '../../resources_servers/example_session_state_mgmt/app.js';
import {
  finalAnswer,
  functionCall,
  toolAsk,
  toolOutputsIn,
  type ServiceCall,
  type ServiceHandler,
} from '../../src/testing/index.js';
import type { Row } from '../../src/runfiles/row.js';
import { normalizeInput } from '../../src/service/index.js';
import { listenEnv, startHarness, typesOf, type RunResult } from '../../test/support/remote-agent.js';

/** the in-repo counter environment end to end, the way the quickstart runs it. */

const DATASET = fileURLToPath(
  new URL('../../../resources_servers/example_session_state_mgmt/data/example.jsonl', import.meta.url),
);
const rows: Row[] = readFileSync(DATASET, 'utf8')
  .split('\n')
  .filter((line) => line.trim() !== '')
  .map((line) => JSON.parse(line) as Row);

/** "add 1 then add 2 then get the count" → [1, 2], read from the task message the service receives. */
function addendsOf(call: ServiceCall): number[] {
  const task = normalizeInput(call.body.input)[0]!.content as string;
  return [...task.matchAll(/add (-?\d+)/g)].map((m) => Number(m[1]));
}

/** The count the environment last reported, read from Gym's tool outputs in the conversation. */
function reportedCount(call: ServiceCall): number | undefined {
  const outputs = toolOutputsIn(call.body.input).map((o) => JSON.parse(o.output) as { count?: unknown });
  const count = outputs.reverse().find((o) => typeof o.count === 'number')?.count;
  return count as number | undefined;
}

/** Asks for both increments in one response, then the count, then answers with it. */
const batchedService: ServiceHandler = (call) => {
  const turn = toolOutputsIn(call.body.input).length;
  const id = (k: number) => `c_${turn}_${k}`;
  if (turn === 0)
    return toolAsk(...addendsOf(call).map((count, k) => functionCall('increment_counter', { count }, id(k))));
  const count = reportedCount(call);
  if (count === undefined) return toolAsk(functionCall('get_counter_value', {}, id(0)));
  return finalAnswer(String(count));
};

/** One ask per call: each increment, then the count, then the answer. */
const incrementalService: ServiceHandler = (call) => {
  const turn = toolOutputsIn(call.body.input).length;
  const addends = addendsOf(call);
  if (turn < addends.length) return toolAsk(functionCall('increment_counter', { count: addends[turn] }, `c_${turn}`));
  const count = reportedCount(call);
  if (count === undefined) return toolAsk(functionCall('get_counter_value', {}, `c_${turn}`));
  return finalAnswer(String(count));
};

async function runDataset(service: ServiceHandler) {
  const env = await listenEnv(
    createCounterServer('example_session_state_mgmt_resources_server'),
    'example_session_state_mgmt_resources_server',
  );
  const h = await startHarness({ service, env, config: { concurrency: 4, max_steps: 8 } });
  try {
    const results = await Promise.all(rows.map((row, i) => h.run({ ...row, _ng_task_index: i, _ng_rollout_index: 0 })));
    return { results, calls: h.service.calls.length, logs: h.logs };
  } finally {
    await h.close();
  }
}

function assertAllSolved(results: RunResult[]): void {
  assert.equal(results.length, 5);
  for (const [i, result] of results.entries()) {
    assert.equal(result._ng_failure_class, undefined, result.error);
    assert.equal(result.reward, 1.0, `task ${i}`);
    const types = typesOf(result.response.output);
    assert.equal(types[0], 'function_call');
    assert.equal(types.at(-1), 'message');
    assert.ok(types.includes('function_call_output'));
    assert.equal(
      (result.response.output.at(-1)!.content as Array<{ text: string }>)[0]!.text,
      String(rows[i]!.expected_count),
    );
  }
}

describe('Q. counter environment end to end', () => {
  test('batched asks (both increments in one response) → 5/5, mean reward 1.0, 3 calls per rollout', async () => {
    const { results, calls, logs } = await runDataset(batchedService);
    assertAllSolved(results);
    assert.equal(calls, 15);
    for (const result of results) {
      assert.deepEqual(typesOf(result.response.output), [
        'function_call',
        'function_call',
        'function_call_output',
        'function_call_output',
        'function_call',
        'function_call_output',
        'message',
      ]);
    }
    assert.deepEqual(
      logs.filter((line) => line.includes('WARNING')),
      [],
    );
  });

  test('incremental asks (one per response) → 5/5, 4 calls per rollout', async () => {
    const { results, calls } = await runDataset(incrementalService);
    assertAllSolved(results);
    assert.equal(calls, 20);
  });

  test('a wrong answer path scores 0 through the real verifier (the reward comes from the session)', async () => {
    const skipSecondIncrement: ServiceHandler = (call) => {
      const turn = toolOutputsIn(call.body.input).length;
      if (turn === 0) return toolAsk(functionCall('increment_counter', { count: addendsOf(call)[0] }, 'only'));
      return finalAnswer('done');
    };
    const { results } = await runDataset(skipSecondIncrement);
    for (const result of results) {
      assert.equal(result._ng_failure_class, undefined);
      assert.equal(result.reward, 0.0);
    }
  });

  test('missing initial_count fails the seed (422); missing expected_count fails verify (422)', async () => {
    const env = await listenEnv(createCounterServer('counter'), 'counter');
    const h = await startHarness({ service: batchedService, env });
    try {
      const { initial_count: _i, ...noInitial } = rows[0]!;
      const seedFailure = await h.run(noInitial);
      assert.match(seedFailure.error!, /^\/seed_session on the resources server failed: HTTP 422: .*initial_count/);
      assert.equal(h.service.calls.length, 0);
      const { expected_count: _e, ...noExpected } = rows[0]!;
      const verifyFailure = await h.run(noExpected);
      assert.match(verifyFailure.error!, /^\/verify on the resources server failed: HTTP 422: .*expected_count/);
      assert.equal(verifyFailure._ng_failure_terminal, undefined);
    } finally {
      await h.close();
    }
  });
});
