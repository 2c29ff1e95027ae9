/**
 * D20 end to end with real processes: `gym env start` runs the counter environment and the remote agent, `gym eval
 * run --no-serve` collects a few hundred counter rows against it, and one server is SIGKILLed mid-collection.
 * The supervisor restarts it on the same port and the run completes without a new `gym env start`: every (task,
 * rollout) exactly once across the two files, every failure retryable, and a resume against the same environment
 * then leaves every rollout completed exactly once.
 * - The agent killed: the collector waits for it instead of failing undelivered rows, so there are no more failure
 *   rows than rollouts in flight at the kill.
 * - The environment killed while every rollout in flight holds a session on it and waits at the service: those
 *   sessions die with it, so each of those rollouts fails as retryable when its next tool call reaches the restarted
 *   process (the boot id changed) instead of being scored on a fresh, empty session; with the counter planner,
 *   every completed row has reward 1.0.
 * These two run the servers apart (`colocate: false`). Co-located (the default, D23), the agent and the environment
 * share one process, so one SIGKILL takes both:
 * - The shared process killed while every rollout in flight holds a session and waits at the service: both servers
 *   are restarted together (one new pid, each with its own record), every rollout in flight fails as retryable with
 *   the agent's lost connection, and the resume completes them.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, test, type TestContext } from 'node:test';
import { createCounterPlanner } from '../../examples/counter-planner/index.js';
import { counterRowLines } from '../../resources_servers/example_session_state_mgmt/scripts/generate.js';
import { keysOf, lineCount, readJsonl, runGym, spawnGym, tempDir } from '../../test/support/cli.js';
import { findFreePort } from '../config/index.js';
import { serve, type Decide, type RunningService } from '../service/index.js';
import { waitUntilAnswering } from '../http/readiness.js';
import { isAlive, processesWithMarker, serverInstances, waitForEnvironment } from '../../test/support/environments.js';
import { eventually, gate, type Gate } from '../../test/support/wait.js';

const ROWS = 400;
const CONCURRENCY = 16;
const marker = randomUUID();
const env = { TSGYM_TEST_MARKER: marker };
const planner = gatedPlanner();
let service: RunningService | undefined;
after(() => service?.close());

const AGENT = 'remote_agent';
const ENVIRONMENT = 'example_session_state_mgmt_resources_server';

test(
  'SIGKILL of the agent server mid-collection: restarted in place, the run completes, each rollout exactly once',
  { timeout: 300_000 },
  (t) => killMidCollection(t, AGENT, false),
);

test(
  'SIGKILL of the environment mid-collection: rollouts of the lost sessions are retried, never scored',
  { timeout: 300_000 },
  (t) => killMidCollection(t, ENVIRONMENT, false),
);

test(
  'SIGKILL of a co-located agent and environment mid-collection: both restart as one, each rollout exactly once',
  { timeout: 300_000 },
  (t) => killMidCollection(t, ENVIRONMENT, true),
);

async function killMidCollection(
  t: TestContext,
  killed: typeof AGENT | typeof ENVIRONMENT,
  colocated: boolean,
): Promise<void> {
  service ??= await serve(planner.decide, { port: 0 });
  const dir = tempDir('tsgym-crash-');
  writeFileSync(path.join(dir, 'in.jsonl'), `${[...counterRowLines(ROWS, 11)].join('\n')}\n`);
  const headPort = await findFreePort();
  const head = [`++head_server.port=${headPort}`];
  const environment = spawnGym(
    [
      'env',
      'start',
      '+config_paths=[counter_remote.yaml]',
      `++remote_agent.responses_api_agents.remote_agent.agent_base_url=${service.url}`,
      `++remote_agent.responses_api_agents.remote_agent.concurrency=${CONCURRENCY}`,
      `++nemo_gym_log_dir=${path.join(dir, 'logs')}`,
      ...(colocated ? [] : ['++remote_agent.responses_api_agents.remote_agent.colocate=false']),
      ...head,
    ],
    { cwd: dir, env },
  );
  // A failed test leaves nothing running and no rollout parked for the next one.
  t.after(async () => {
    planner.release();
    environment.child.kill('SIGINT');
    await environment.result;
  });
  await waitForEnvironment(headPort, 120_000);
  const beforeAll = await serverInstances(headPort);
  const before = beforeAll.find((i) => i.process_name === killed)!;
  const pids = new Set(beforeAll.map((i) => i.pid));
  assert.equal(pids.size, colocated ? 1 : 2, `server pids ${[...pids].join(', ')}`);

  const args = [
    'eval',
    'run',
    '--no-serve',
    '-a',
    'remote_agent',
    '-i',
    'in.jsonl',
    '-o',
    'r.jsonl',
    `+num_samples_in_parallel=${CONCURRENCY}`,
    ...head,
  ];
  const collection = spawnGym(args, { cwd: dir, env });
  t.after(() => void collection.child.kill('SIGKILL'));
  const rollouts = path.join(dir, 'r.jsonl');
  await eventually(() => lineCount(rollouts) >= 40, {
    what: 'the collection to be under way',
    timeoutMs: 120_000,
    intervalMs: 20,
  });
  let doneAtKill: number;
  if (killed === AGENT) {
    process.kill(before.pid!, 'SIGKILL');
    doneAtKill = lineCount(rollouts);
  } else {
    // Every rollout in flight holds a session on the environment (seeded, incremented) and waits at the service.
    planner.hold();
    await eventually(() => planner.parked === CONCURRENCY, {
      what: 'every rollout in flight to wait at the service',
      timeoutMs: 120_000,
    });
    doneAtKill = lineCount(rollouts);
    process.kill(before.pid!, 'SIGKILL');
    await restartedAndAnswering(headPort, killed, 120_000);
    planner.release();
  }
  const res = await collection.result;
  assert.equal(res.code, 0, `${res.stdout}\n${res.stderr}`);
  assert.ok(doneAtKill < ROWS, 'the kill came after the collection had finished');

  const completed = readJsonl(rollouts);
  const failures = readJsonl(path.join(dir, 'r_failures.jsonl'));
  const all = keysOf([...completed, ...failures]);
  assert.equal(new Set(all).size, ROWS, 'a (task, rollout) is missing or written twice');
  assert.equal(all.length, ROWS);
  const scoredOnLostSession = completed.filter((row) => row.reward !== 1);
  assert.equal(
    scoredOnLostSession.length,
    0,
    `completed rows not scored 1.0: ${JSON.stringify(scoredOnLostSession.slice(0, 3))}`,
  );
  if (killed === AGENT) {
    assert.ok(
      failures.length <= CONCURRENCY,
      `${failures.length} failure rows, more than the ${CONCURRENCY} rollouts in flight at the kill`,
    );
  } else if (colocated) {
    // Every rollout in flight was in the process that died: each /run lost its connection, none was scored.
    assert.equal(failures.length, CONCURRENCY);
    for (const failure of failures) assert.match(String(failure.error), /the agent may have crashed mid-rollout/);
  } else {
    // Exactly the rollouts whose sessions died: their next tool call reached the restarted process.
    assert.equal(failures.length, CONCURRENCY);
    for (const failure of failures)
      assert.match(
        String(failure.error),
        new RegExp(`the resources server '${ENVIRONMENT}' restarted during this rollout`),
      );
  }
  for (const failure of failures) assert.equal(failure._ng_failure_terminal, undefined, String(failure.error));
  t.diagnostic(
    `killed ${killed} with ${doneAtKill} of ${ROWS} rollouts written; ${failures.length} failure row(s) after the restart`,
  );

  // The same environment, restarted in place, is what the collection finished against: no new `gym env start`.
  const afterAll = await serverInstances(headPort);
  for (const restarted of colocated ? afterAll : afterAll.filter((i) => i.process_name === killed)) {
    const earlier = beforeAll.find((i) => i.process_name === restarted.process_name)!;
    assert.equal(restarted.url, earlier.url);
    assert.notEqual(restarted.pid, earlier.pid);
    assert.ok(isAlive(restarted.pid!));
    assert.equal(restarted.restarts, 1, restarted.process_name);
    assert.match(restarted.last_exit ?? '', /^was killed by SIGKILL/);
  }
  if (colocated) assert.equal(new Set(afterAll.map((i) => i.pid)).size, 1, 'the pair shares one new process');
  const status = await runGym(['env', 'status', ...head], { cwd: dir, env });
  assert.equal(status.stdout.match(/restarts: 1 \(last exit: was killed by SIGKILL at /g)?.length, colocated ? 2 : 1);

  const resumed = await runGym([...args, '+resume_from_cache=true'], { cwd: dir, env });
  assert.equal(resumed.code, 0, resumed.stderr);
  assert.equal(new Set(keysOf(readJsonl(rollouts))).size, ROWS);
  assert.equal(lineCount(rollouts), ROWS);

  environment.child.kill('SIGINT');
  await environment.result;
  await eventually(() => processesWithMarker(marker).length === 0, {
    what: 'no server is left',
    timeoutMs: 30_000,
    intervalMs: 25,
  });
}

/** The incremental counter planner, which can park every rollout's later calls (step 2 on) until released. */
function gatedPlanner() {
  const plan = createCounterPlanner({ incremental: true });
  let held: Gate | undefined;
  let parked = 0;
  const decide: Decide = async (conversation, tools, ctx) => {
    if (held && ctx.step > 1) {
      parked++;
      await held.opened;
      parked--;
    }
    return plan(conversation, tools, ctx);
  };
  return {
    decide,
    get parked() {
      return parked;
    },
    hold(): void {
      held = gate();
    },
    release(): void {
      held?.open();
      held = undefined;
    },
  };
}

/** Wait (bounded: `timeoutMs` is only an upper bound) until the head server lists `name` as restarted once and its
 * new process answers. */
async function restartedAndAnswering(headPort: number, name: string, timeoutMs: number): Promise<void> {
  let url: string | undefined;
  await eventually(
    async () => {
      const instance = (await serverInstances(headPort)).find((i) => i.process_name === name);
      if (instance?.restarts === 1) url = instance.url;
      return url !== undefined;
    },
    { what: `the head server to list ${name} as restarted once`, timeoutMs, intervalMs: 25 },
  );
  assert.ok(
    await waitUntilAnswering(url!, { signal: AbortSignal.timeout(timeoutMs) }),
    `${name} was restarted but did not answer within ${timeoutMs} ms`,
  );
}
