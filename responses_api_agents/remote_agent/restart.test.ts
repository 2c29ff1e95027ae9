/**
 * D20 for the rollouts in flight when a resources server restarts: the new process on the same port has lost its
 * in-memory sessions, so a tool call or `/verify` of an older rollout reaching it would run on a fresh, empty session
 * and be scored as a completed row. The agent compares each reply's `x-gym-server-boot` with the one `/seed_session`
 * answered with and fails such a rollout as retryable instead. Real loopback servers throughout: two counter
 * environments, one after the other on the same port, and a scripted service that waits at a gate while the test
 * swaps them.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createCounterServer } from '../../resources_servers/example_session_state_mgmt/app.js';
import { SERVER_BOOT_HEADER } from '../../src/contract/gym-wire.js';
import { finalAnswer, functionCall, toolAsk, type ServiceCall } from '../../src/testing/index.js';
import {
  basicRow,
  gates,
  listenEnv,
  startHarness,
  type RecordingEnv,
  type RunResult,
} from '../../test/support/remote-agent.js';

const ENV_NAME = 'example_session_state_mgmt_resources_server';
/** Seeded at 3, +1 then +2: the counter environment scores 1.0 only on the session that saw both increments. */
const ROW = basicRow('add 1 then add 2', { initial_count: 3, expected_count: 6 });
const RESTARTED = new RegExp(
  `the resources server '${ENV_NAME}' restarted during this rollout \\(its session state was lost\\); ` +
    'the rollout will be retried on resume',
);

/** A counter environment that remembers the paths it was asked for. */
async function startCounterEnv(port = 0): Promise<RecordingEnv & { paths: string[] }> {
  const app = createCounterServer(ENV_NAME);
  const paths: string[] = [];
  app.use((req, next) => {
    paths.push(req.path);
    return next();
  });
  return { ...(await listenEnv(app, ENV_NAME, [], port)), paths };
}

/**
 * Run ROW with the service waiting at call `restartBeforeCall`: the test then stops the first environment, starts a
 * second one on the same port, and opens the gate. Without a restart the run goes straight through.
 */
async function runAcrossRestart(restartBeforeCall: number | undefined) {
  const gate = gates();
  const script = [
    toolAsk(functionCall('increment_counter', { count: 1 })),
    toolAsk(functionCall('increment_counter', { count: 2 })),
    finalAnswer('6'),
  ].map((step, index) => async (call: ServiceCall) => {
    if (index === restartBeforeCall) await gate.wait(call);
    return step;
  });
  const first = await startCounterEnv();
  const h = await startHarness({ service: script, env: first });
  let second: Awaited<ReturnType<typeof startCounterEnv>> | undefined;
  try {
    const running = h.run(ROW);
    if (restartBeforeCall !== undefined) {
      await h.service.waitForCalls(restartBeforeCall + 1);
      await first.close();
      second = await startCounterEnv(Number(new URL(first.url).port));
      gate.open(restartBeforeCall);
    }
    return { row: await running, first, second, serviceCalls: h.service.calls.length };
  } finally {
    await Promise.all([h.close(), second?.close()]);
  }
}

function assertRetryableRestartFailure(row: RunResult): void {
  assert.equal(row.reward, 0);
  assert.match(row.error!, RESTARTED);
  assert.equal(row._ng_failure_class, 'remote_agent_error');
  assert.equal(row._ng_failure_terminal, undefined, 'a restart is retryable');
}

describe('a resources server restarted mid-rollout', () => {
  test('without a restart the counter rollout succeeds with reward 1.0 (the control)', async () => {
    const { row, first } = await runAcrossRestart(undefined);
    assert.equal(row.error, undefined);
    assert.equal(row.reward, 1);
    assert.deepEqual(first.paths, ['/seed_session', '/increment_counter', '/increment_counter', '/verify']);
  });

  test('a tool call answered by the new process fails the rollout as retryable, and it is never verified', async () => {
    const { row, first, second, serviceCalls } = await runAcrossRestart(1);
    assertRetryableRestartFailure(row);
    assert.match(row.error!, /^agent loop failed: /);
    assert.deepEqual(first.paths, ['/seed_session', '/increment_counter']);
    assert.deepEqual(second!.paths, ['/increment_counter'], 'no /verify on the session the new process made up');
    assert.equal(serviceCalls, 2, 'the service is not asked again after the failure');
  });

  test('a /verify answered by the new process is not taken as the score', async () => {
    const { row, first, second } = await runAcrossRestart(2);
    assertRetryableRestartFailure(row);
    assert.match(row.error!, /^\/verify on the resources server failed: /);
    assert.deepEqual(first.paths, ['/seed_session', '/increment_counter', '/increment_counter']);
    assert.deepEqual(second!.paths, ['/verify']);
  });

  test('every reply of the resources server, errors included, carries one boot id per server instance', async () => {
    const a = await startCounterEnv();
    const b = await startCounterEnv();
    try {
      const boot = async (env: RecordingEnv, path: string, body: unknown = {}) => {
        const headers = { 'content-type': 'application/json' };
        const res = await fetch(`${env.url}${path}`, { method: 'POST', body: JSON.stringify(body), headers });
        return res.headers.get(SERVER_BOOT_HEADER);
      };
      const seed = { initial_count: 1 };
      const seen = [
        await boot(a, '/seed_session', seed),
        await boot(a, '/no_such_tool'),
        await boot(a, '/increment_counter'),
      ];
      assert.match(seen[0] ?? '', /^[0-9a-f-]{36}$/);
      assert.deepEqual(seen, [seen[0], seen[0], seen[0]], 'success, 404 and 422 replies carry the same id');
      assert.notEqual(await boot(b, '/seed_session', seed), seen[0]);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});
