/**
 * D20 end to end with real processes: `gym env start` runs the counter environment and the remote agent, `gym eval
 * run --no-serve` collects a few hundred counter rows against it, and the agent server is SIGKILLed mid-collection.
 * The supervisor restarts it on the same port, the collector waits for it instead of failing undelivered rows, and
 * the run completes without a new `gym env start`: every (task, rollout) exactly once across the two files, no more
 * failure rows than rollouts in flight at the kill (all retryable), and a resume against the same environment then
 * leaves every rollout completed exactly once.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import { startCounterPlannerService, type StartedService } from '../../examples/counter-planner/index.js';
import { counterRowLines } from '../../resources_servers/example_session_state_mgmt/scripts/generate.js';
import { keysOf, lineCount, readJsonl, runGym, spawnGym, tempDir, waitFor, type RunningGym } from '../collect/cli-harness.js';
import { findFreePort } from '../config/index.js';
import { eventually, isAlive, processesWithMarker, serverInstances, waitForEnvironment } from './testing-fixtures.js';

const ROWS = 400;
const CONCURRENCY = 16;
const marker = randomUUID();
const env = { TSGYM_TEST_MARKER: marker };
let service: StartedService | undefined;
let environment: RunningGym | undefined;
after(async () => {
  environment?.child.kill('SIGINT');
  await environment?.result;
  await service?.close();
});

test('SIGKILL of the agent server mid-collection: restarted in place, the run completes, each rollout exactly once', { timeout: 60_000 }, async (t) => {
  service = await startCounterPlannerService();
  const dir = tempDir('tsgym-crash-');
  writeFileSync(path.join(dir, 'in.jsonl'), `${[...counterRowLines(ROWS, 11)].join('\n')}\n`);
  const headPort = await findFreePort();
  const head = [`++head_server.port=${headPort}`];
  environment = spawnGym(
    [
      'env',
      'start',
      '+config_paths=[counter_remote.yaml]',
      `++remote_agent.responses_api_agents.remote_agent.agent_base_url=${service.url}`,
      `++nemo_gym_log_dir=${path.join(dir, 'logs')}`,
      ...head,
    ],
    { cwd: dir, env },
  );
  await waitForEnvironment(headPort);
  const agentBefore = (await serverInstances(headPort)).find((i) => i.process_name === 'remote_agent')!;

  const args = ['eval', 'run', '--no-serve', '-a', 'remote_agent', '-i', 'in.jsonl', '-o', 'r.jsonl', `+num_samples_in_parallel=${CONCURRENCY}`, ...head];
  const collection = spawnGym(args, { cwd: dir, env });
  const rollouts = path.join(dir, 'r.jsonl');
  await waitFor(() => lineCount(rollouts) >= 40, 'the collection to be under way', 20_000);
  process.kill(agentBefore.pid!, 'SIGKILL');
  const doneAtKill = lineCount(rollouts);
  const res = await collection.result;
  assert.equal(res.code, 0, `${res.stdout}\n${res.stderr}`);
  assert.ok(doneAtKill < ROWS, 'the kill came after the collection had finished');

  const completed = readJsonl(rollouts);
  const failures = readJsonl(path.join(dir, 'r_failures.jsonl'));
  const all = keysOf([...completed, ...failures]);
  assert.equal(new Set(all).size, ROWS, 'a (task, rollout) is missing or written twice');
  assert.equal(all.length, ROWS);
  assert.ok(failures.length <= CONCURRENCY, `${failures.length} failure rows, more than the ${CONCURRENCY} rollouts in flight at the kill`);
  for (const failure of failures) assert.equal(failure._ng_failure_terminal, undefined, String(failure.error));
  assert.ok(completed.every((row) => row.reward === 1));
  t.diagnostic(`killed the agent with ${doneAtKill} of ${ROWS} rollouts written; ${failures.length} failure row(s) after the restart`);

  // The same environment, restarted in place, is what the collection finished against: no new `gym env start`.
  const agentAfter = (await serverInstances(headPort)).find((i) => i.process_name === 'remote_agent')!;
  assert.equal(agentAfter.url, agentBefore.url);
  assert.notEqual(agentAfter.pid, agentBefore.pid);
  assert.ok(isAlive(agentAfter.pid!));
  assert.equal(agentAfter.restarts, 1);
  assert.match(agentAfter.last_exit ?? '', /^was killed by SIGKILL/);
  const status = await runGym(['env', 'status', ...head], { cwd: dir, env });
  assert.match(status.stdout, /restarts: 1 \(last exit: was killed by SIGKILL at /);

  const resumed = await runGym([...args, '+resume_from_cache=true'], { cwd: dir, env });
  assert.equal(resumed.code, 0, resumed.stderr);
  assert.equal(new Set(keysOf(readJsonl(rollouts))).size, ROWS);
  assert.equal(lineCount(rollouts), ROWS);

  environment.child.kill('SIGINT');
  await environment.result;
  environment = undefined;
  await eventually(() => processesWithMarker(marker).length === 0, 5_000, 'no server is left');
});
