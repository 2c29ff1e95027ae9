/**
 * `gym worker --metrics-port`, through real processes and only their outside surfaces: a real `redis-server`,
 * `gym env start` (the counter environment and the remote agent of counter_remote.yaml against a scripted service),
 * `gym worker --queue redis://… --metrics-port 0`, and `gym eval run --queue redis://…` collecting the 5 counter
 * tasks (one fails with an HTTP 500 at its second step). The worker's `GET /metrics` is read while the service holds
 * every rollout (5 jobs in flight) and after the run (4 completed, 1 by its failure class, none in flight), and
 * must agree with the run's files. Bad `metrics_port` values and a taken port stop the worker with an error naming
 * the setting.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { findFreePort } from '../config/index.js';
import { startRedis, type RedisProcess } from '../../test/support/redis-server.js';
import { reply, startScriptedService, toolOutputsIn, type ScriptedService } from '../testing/index.js';
import { readJsonl, runGym, spawnGym, tempDir, type RunningGym } from '../../test/support/cli.js';
import { addendsOf, solveCounterTask } from '../../test/support/live-run.js';
import { eventually, gate } from '../../test/support/wait.js';

const AGENT_KEY = 'remote_agent.responses_api_agents.remote_agent';
const ENV_KEY = 'example_session_state_mgmt_resources_server.resources_servers.example_session_state_mgmt';
const INPUT = path.resolve('resources_servers/example_session_state_mgmt/data/example.jsonl');
/** Upper bound of every wait for a start or a state that takes a second or so on a quiet machine. */
const WAIT_MS = 60_000;

const hold = gate();
let firstSteps = 0;
let redis: RedisProcess;
let service: ScriptedService;
let env: RunningGym;
let worker: RunningGym;
let metricsUrl: string;
let headPort: number;
let dir: string;

before(async () => {
  redis = await startRedis();
  // Every rollout's first service call waits for the gate: the test reads the worker's metrics meanwhile.
  service = await startScriptedService(async (call) => {
    if (toolOutputsIn(call.body.input).length === 0) {
      firstSteps++;
      await hold.opened;
    }
    return addendsOf(call)[0] === 13 && toolOutputsIn(call.body.input).length > 0
      ? reply.status(500, 'service exploded')
      : solveCounterTask(call);
  });
  dir = tempDir('tsgym-worker-metrics-');
  headPort = await findFreePort();
  env = spawnGym(
    [
      'env',
      'start',
      '+config_paths=[counter_remote.yaml]',
      `++head_server.port=${headPort}`,
      `++${AGENT_KEY}.agent_base_url=${service.url}`,
      `++${AGENT_KEY}.concurrency=8`,
      `++${AGENT_KEY}.port=${await findFreePort()}`,
      `++${ENV_KEY}.port=${await findFreePort()}`,
    ],
    { cwd: dir },
  );
  let stdout = '';
  env.child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  await eventually(() => /servers ready/.test(stdout) || env.child.exitCode !== null, {
    what: () => `gym env start: ${stdout}${env.stderr()}`,
    timeoutMs: WAIT_MS,
    intervalMs: 50,
  });
  assert.equal(env.child.exitCode, null, env.stderr());

  worker = spawnGym(
    [
      'worker',
      '--queue',
      redis.url,
      '--concurrency',
      '8',
      '--metrics-port',
      '0',
      `++head_server.port=${headPort}`,
      '+worker_id=metrics-test',
      '+worker_drain_secs=5',
    ],
    { cwd: dir },
  );
  await eventually(() => /worker metrics on (\S+)/.test(worker.stderr()) || worker.child.exitCode !== null, {
    what: () => `the worker's metrics line; stderr: ${worker.stderr()}`,
    timeoutMs: WAIT_MS,
  });
  assert.equal(worker.child.exitCode, null, worker.stderr());
  metricsUrl = /worker metrics on (\S+)/.exec(worker.stderr())![1]!;
});

after(async () => {
  hold.open();
  if (worker && worker.child.exitCode === null) {
    worker.child.kill('SIGINT');
    await worker.result;
  }
  if (env) {
    env.child.kill('SIGINT');
    await env.result;
  }
  await service?.close();
  await redis?.kill();
});

/** The samples of one scrape, keyed `name{labels}` exactly as exposed (labels in prom-client's order). */
async function scrape(): Promise<Map<string, number>> {
  const res = await fetch(metricsUrl);
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  const samples = new Map<string, number>();
  for (const line of (await res.text()).split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    samples.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return samples;
}

const finishedSeries = (samples: Map<string, number>): Array<[string, number]> =>
  [...samples].filter(([key]) => key.startsWith('gym_worker_jobs_finished_total')).sort();

test("the worker's /metrics counts the jobs of a queued run, during and after it", async (t) => {
  const idle = await scrape();
  assert.equal(idle.get('gym_worker_jobs_in_flight'), 0);
  assert.deepEqual(finishedSeries(idle), [], 'no job finished yet');
  assert.ok((idle.get('process_resident_memory_bytes') ?? 0) > 0);
  assert.ok(idle.has('nodejs_eventloop_lag_seconds'));

  const run = spawnGym(
    [
      'eval',
      'run',
      '--no-serve',
      `++head_server.port=${headPort}`,
      '--queue',
      redis.url,
      '--concurrency',
      '8',
      '-a',
      'remote_agent',
      '-i',
      INPUT,
      '-o',
      path.join(dir, 'out/rollouts.jsonl'),
    ],
    { cwd: dir },
  );
  t.after(() => {
    if (run.child.exitCode === null && run.child.signalCode === null) run.child.kill('SIGKILL');
  });
  try {
    // All 5 rollouts are held at their first service call: 5 jobs in flight, none finished.
    await eventually(async () => firstSteps === 5 && (await scrape()).get('gym_worker_jobs_in_flight') === 5, {
      what: () => `5 jobs in flight (${firstSteps} first steps at the service); collector: ${run.stderr()}`,
      timeoutMs: WAIT_MS,
      intervalMs: 50,
    });
    assert.deepEqual(finishedSeries(await scrape()), []);
  } finally {
    hold.open();
  }
  const result = await run.result;
  assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);

  const rollouts = readJsonl(path.join(dir, 'out/rollouts.jsonl'));
  const failures = readJsonl(path.join(dir, 'out/rollouts_failures.jsonl'));
  assert.equal(rollouts.length, 4);
  assert.deepEqual(
    failures.map((row) => row._ng_failure_class),
    ['remote_agent_error'],
  );
  const done = await scrape();
  assert.equal(done.get('gym_worker_jobs_in_flight'), 0);
  assert.deepEqual(finishedSeries(done), [
    ['gym_worker_jobs_finished_total{outcome_class="completed"}', 4],
    ['gym_worker_jobs_finished_total{outcome_class="remote_agent_error"}', 1],
  ]);
});

test("the worker's listener answers 404 to anything but GET /metrics", async () => {
  const other = await fetch(metricsUrl.replace(/\/metrics$/, '/status'));
  assert.equal(other.status, 404);
  await other.arrayBuffer();
  const post = await fetch(metricsUrl, { method: 'POST', body: '{}' });
  assert.equal(post.status, 404);
  await post.arrayBuffer();
  assert.equal((await scrape()).get('gym_worker_jobs_in_flight'), 0, 'and keeps serving');
});

test('an out-of-range metrics_port stops the worker before it takes a job, naming the setting', async () => {
  const run = await runGym(['worker', '--queue', redis.url, `++head_server.port=${headPort}`, '+metrics_port=70000'], {
    cwd: dir,
  });
  assert.notEqual(run.code, 0);
  assert.match(run.stderr, /metrics_port must be a port number from 0 to 65535, got 70000/);
});

test('a metrics port already taken stops the worker with an error naming the port', async () => {
  const taken = net.createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  const port = (taken.address() as net.AddressInfo).port;
  try {
    const run = await runGym(
      ['worker', '--queue', redis.url, `++head_server.port=${headPort}`, '--metrics-port', String(port)],
      { cwd: dir },
    );
    assert.notEqual(run.code, 0);
    assert.match(run.stderr, new RegExp(`cannot serve its metrics: port ${port} on 127\\.0\\.0\\.1 is already in use`));
    assert.match(run.stderr, /--metrics-port N/);
    assert.doesNotMatch(run.stderr, /unexpected/);
  } finally {
    taken.close();
  }
});
