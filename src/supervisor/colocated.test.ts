/**
 * Co-location (D23) with real processes: a user's environment written with the kit (`tsgym/environment`) and tsgym's
 * remote agent, started by `gym env start`, share one process yet each answer on their own port, keep their own
 * record and log file; an exception thrown from the environment's code (uncaught, outside any request) takes the
 * shared process down, and the supervisor restarts both servers as one — never one half of the pair. With
 * `colocate: false` the two run apart. (A SIGKILL mid-collection is in crash-recovery.test.ts.)
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import { stringify } from 'yaml';
import { spawnGym, tempDir, type RunningGym } from '../../test/support/cli.js';
import { KIT_URL } from '../../test/support/environment-process.js';
import { isAlive, processesWithMarker, serverInstances, waitForEnvironment } from '../../test/support/environments.js';
import { eventually } from '../../test/support/wait.js';
import { findFreePort } from '../config/index.js';
import { request } from '../http/client.js';

const BOOM_ENVIRONMENT = `
import { defineEnvironment, isMainModule, runEnvironment, z } from ${JSON.stringify(KIT_URL)};

export const environment = defineEnvironment({
  name: 'boom',
  tools: (tool) => ({
    explode: tool({
      description: 'Throw from environment code outside the request, after answering.',
      input: z.looseObject({}),
      run: () => {
        setTimeout(() => {
          throw new Error('boom from environment code');
        }, 100);
        return { exploding: true };
      },
    }),
  }),
  verify: () => ({ reward: 1 }),
});

if (isMainModule(import.meta.url)) void runEnvironment(environment);
`;

const marker = randomUUID();
/** Every `gym env start` spawned here: one a failed test left running is stopped after the file. */
const spawned: RunningGym[] = [];
after(async () => {
  const left = spawned.filter((gym) => gym.child.exitCode === null && gym.child.signalCode === null);
  for (const gym of left) gym.child.kill('SIGINT');
  await Promise.all(left.map((gym) => gym.result));
});

async function startPair(extra: readonly string[] = []) {
  const dir = tempDir('tsgym-colocated-');
  mkdirSync(path.join(dir, 'resources_servers', 'boom'), { recursive: true });
  writeFileSync(path.join(dir, 'resources_servers', 'boom', 'app.mjs'), BOOM_ENVIRONMENT);
  writeFileSync(
    path.join(dir, 'pair.yaml'),
    stringify({
      boom: { resources_servers: { boom: { entrypoint: 'app.mjs', domain: 'other' } } },
      remote_agent: {
        responses_api_agents: {
          remote_agent: {
            entrypoint: 'app.py',
            agent_base_url: 'http://127.0.0.1:9',
            resources_server: { type: 'resources_servers', name: 'boom' },
          },
        },
      },
    }),
  );
  const headPort = await findFreePort();
  const logDir = path.join(dir, 'logs');
  const gym = spawnGym(
    [
      'env',
      'start',
      '+config_paths=[pair.yaml]',
      `++head_server.port=${headPort}`,
      `++nemo_gym_log_dir=${logDir}`,
      ...extra,
    ],
    { cwd: dir, env: { TSGYM_TEST_MARKER: marker } },
  );
  spawned.push(gym);
  // Ready when gym env start says so (its own readiness check), not merely when the ports answer: a crash before that
  // line is a failed start-up, not a restart.
  let stdout = '';
  gym.child.stdout!.on('data', (chunk: Buffer | string) => (stdout += String(chunk)));
  await eventually(
    () => {
      if (/^All 2 \/ 2 servers ready/m.test(stdout)) return true;
      if (gym.child.exitCode !== null || gym.child.signalCode !== null)
        throw new Error(`gym env start exited before it was ready:\n${stdout}\n${gym.stderr()}`);
      return false;
    },
    { what: () => `gym env start to be ready (so far:\n${stdout}\n${gym.stderr()})`, timeoutMs: 120_000 },
  );
  const instances = await waitForEnvironment(headPort, 120_000);
  const stop = async (): Promise<void> => {
    gym.child.kill('SIGINT');
    await gym.result;
    await eventually(() => processesWithMarker(marker).length === 0, {
      what: 'no server is left',
      timeoutMs: 30_000,
      intervalMs: 25,
    });
  };
  return { gym, headPort, logDir, instances, stop };
}

test('an exception thrown from co-located environment code restarts the agent and the environment together', async () => {
  const pair = await startPair();
  try {
    const [boom, agent] = ['boom', 'remote_agent'].map((name) => pair.instances.find((i) => i.process_name === name)!);
    assert.ok(boom && agent);
    assert.equal(boom.pid, agent.pid, 'the two servers share one process');
    assert.notEqual(boom.port, agent.port, 'each keeps its own port');

    const res = await request(`${boom.url}/explode`, { json: {}, timeoutMs: 30_000 });
    assert.equal(res.status, 200, res.text());

    await eventually(
      async () => {
        const now = await serverInstances(pair.headPort);
        return now.length === 2 && now.every((i) => i.restarts === 1 && i.pid !== boom.pid && isAlive(i.pid!));
      },
      { what: 'both servers to be restarted', timeoutMs: 120_000, intervalMs: 50 },
    );
    const after = await serverInstances(pair.headPort);
    assert.equal(new Set(after.map((i) => i.pid)).size, 1, 'restarted as one process, never half of the pair');
    for (const instance of after) {
      assert.match(instance.last_exit ?? '', /^exited with code 70 at /, instance.process_name);
      const before = pair.instances.find((i) => i.process_name === instance.process_name)!;
      assert.equal(instance.url, before.url);
    }
    await eventually(
      async () => {
        const answers = await Promise.all(
          after.map((i) =>
            request(`${i.url}/`, { timeoutMs: 30_000 }).then(
              (r) => r.status,
              () => 0,
            ),
          ),
        );
        return answers.every((status) => status === 200);
      },
      { what: 'both servers to answer again', timeoutMs: 120_000, intervalMs: 50 },
    );
    // Each server keeps its own log file; the shared process's output (the exception's stack included) is in both.
    // (The supervisor appends a line to the log files after passing it on: waited for, not assumed.)
    const logOf = (name: string): string => readFileSync(path.join(pair.logDir, `${name}.log`), 'utf8');
    for (const name of ['boom', 'remote_agent']) {
      await eventually(() => logOf(name).match(/^remote_agent listening on/gm)?.length === 2, {
        what: `${name}.log to hold both starts`,
        timeoutMs: 120_000,
      });
      assert.match(logOf(name), /boom from environment code/, `${name}.log`);
      assert.equal(logOf(name).match(/^boom listening on/gm)?.length, 2, `${name}.log`);
    }
  } finally {
    await pair.stop();
  }
});

test('colocate: false runs the agent and its environment in processes of their own', async () => {
  const pair = await startPair(['++boom.resources_servers.boom.colocate=false']);
  try {
    assert.equal(new Set(pair.instances.map((i) => i.pid)).size, 2);
  } finally {
    await pair.stop();
  }
});

test('a colocate value that is not a boolean is refused at start, naming the key', async () => {
  const dir = tempDir('tsgym-colocated-');
  const gym = spawnGym(
    [
      'env',
      'start',
      `+config_paths=[${path.join(process.cwd(), 'counter_remote.yaml')}]`,
      '++remote_agent.responses_api_agents.remote_agent.colocate=maybe',
    ],
    { cwd: dir, env: { TSGYM_TEST_MARKER: marker } },
  );
  const result = await gym.result;
  assert.notEqual(result.code, 0);
  assert.match(
    result.stderr,
    /remote_agent\.responses_api_agents\.remote_agent\.colocate must be true or false, got "maybe"/,
  );
});
