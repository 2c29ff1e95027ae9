import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { findFreePort } from '../config/index.js';
import { startRedis, type RedisProcess } from '../../test/support/redis-server.js';
import { reply, startScriptedService, toolOutputsIn, type ScriptedService } from '../testing/index.js';
import { runGym, spawnGym, tempDir, type RunningGym } from '../../test/support/cli.js';
import { addendsOf, solveCounterTask } from '../../test/support/live-run.js';
import { eventually } from '../../test/support/wait.js';

/**
 * A real Prometheus (Debian's `prometheus`) finds its targets itself, through `http_sd_configs` pointed at the head
 * server's `GET /scrape_targets`, and scrapes what `gym env start` runs: the remote agent co-located with the counter
 * environment (one process, one target), a second counter environment in a process of its own, and a Python
 * resources server (no /metrics, so not listed). The servers are advertised at another address of this machine
 * (`head_server.advertise_host=127.0.0.2`), so the targets must be the advertised addresses. A `gym worker
 * --metrics-port` on a real `redis-server` is a static target (the head server does not know its workers). Meanwhile
 * `gym eval run --no-serve --queue` collects 5 rollouts through that worker (one fails with an HTTP 500 at its second
 * step); Prometheus's query API must then return the counters the run implies, the agent's and the worker's.
 */
const ENV_KEY = 'example_session_state_mgmt_resources_server.resources_servers.example_session_state_mgmt';
const AGENT_KEY = 'remote_agent.responses_api_agents.remote_agent';
const SECOND_KEY = 'counter_b.resources_servers.example_session_state_mgmt';
const PYTHON_KEY = 'python_env.resources_servers.python_stdlib_example';
const ADVERTISED = '127.0.0.2';
const PAIR = 'example_session_state_mgmt_resources_server+remote_agent';
/** Upper bound of every wait for a start or a scrape that takes a second or so on a quiet machine. */
const WAIT_MS = 60_000;

let service: ScriptedService;
let env: RunningGym;
let redis: RedisProcess;
let worker: RunningGym;
let prometheus: ChildProcess | undefined;
let promUrl: string;
let dir: string;
let ports: { head: number; agent: number; environment: number; second: number; python: number; worker: number };

before(async () => {
  service = await startScriptedService((call) =>
    addendsOf(call)[0] === 13 && toolOutputsIn(call.body.input).length > 0
      ? reply.status(500, 'service exploded')
      : solveCounterTask(call),
  );
  dir = tempDir('tsgym-prometheus-');
  ports = {
    head: await findFreePort(),
    agent: await findFreePort(),
    environment: await findFreePort(),
    second: await findFreePort(),
    python: await findFreePort(),
    worker: await findFreePort(),
  };
  const common = ['+config_paths=[counter_remote.yaml]', `++head_server.port=${ports.head}`];
  env = spawnGym(
    [
      'env',
      'start',
      ...common,
      `++head_server.advertise_host=${ADVERTISED}`,
      `++${AGENT_KEY}.agent_base_url=${service.url}`,
      `++${AGENT_KEY}.port=${ports.agent}`,
      `++${ENV_KEY}.port=${ports.environment}`,
      `++${SECOND_KEY}.entrypoint=app.py`,
      `++${SECOND_KEY}.domain=agent`,
      `++${SECOND_KEY}.port=${ports.second}`,
      `++${PYTHON_KEY}.entrypoint=app.py`,
      `++${PYTHON_KEY}.domain=other`,
      `++${PYTHON_KEY}.port=${ports.python}`,
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
  redis = await startRedis();
  worker = spawnGym(
    ['worker', '--queue', redis.url, ...common, '--metrics-port', String(ports.worker), '+worker_drain_secs=5'],
    { cwd: dir },
  );
  await eventually(() => /worker metrics on/.test(worker.stderr()) || worker.child.exitCode !== null, {
    what: () => `gym worker's metrics listener; stderr: ${worker.stderr()}`,
    timeoutMs: WAIT_MS,
  });
  assert.equal(worker.child.exitCode, null, worker.stderr());

  const promPort = await findFreePort();
  promUrl = `http://127.0.0.1:${promPort}`;
  const config = path.join(dir, 'prometheus.yml');
  writeFileSync(
    config,
    [
      'global: {scrape_interval: 1s, scrape_timeout: 1s}',
      'scrape_configs:',
      `  - {job_name: tsgym, http_sd_configs: [{url: 'http://127.0.0.1:${ports.head}/scrape_targets', refresh_interval: 1s}]}`,
      `  - {job_name: tsgym_worker, static_configs: [{targets: ['127.0.0.1:${ports.worker}'], labels: {server_kind: worker}}]}`,
      '',
    ].join('\n'),
  );
  prometheus = spawn(
    'prometheus',
    [
      `--config.file=${config}`,
      `--storage.tsdb.path=${path.join(dir, 'tsdb')}`,
      `--web.listen-address=127.0.0.1:${promPort}`,
    ],
    { stdio: 'ignore' },
  );
  await eventually(async () => (await fetch(`${promUrl}/-/ready`).catch(() => undefined))?.ok === true, {
    what: 'Prometheus ready',
    timeoutMs: WAIT_MS,
    intervalMs: 100,
  });

  const run = await runGym(
    [
      'eval',
      'run',
      '--no-serve',
      ...common,
      '--queue',
      redis.url,
      '-a',
      'remote_agent',
      '-i',
      path.resolve('resources_servers/example_session_state_mgmt/data/example.jsonl'),
      '-o',
      path.join(dir, 'out/rollouts.jsonl'),
    ],
    { cwd: dir },
  );
  assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);
});

after(async () => {
  // Prometheus is gone before its storage directory is removed (at exit, with the test's temp directory).
  if (prometheus && prometheus.exitCode === null && prometheus.signalCode === null) {
    const exited = new Promise((resolve) => prometheus!.once('exit', resolve));
    prometheus.kill('SIGTERM');
    await exited;
  }
  if (worker && worker.child.exitCode === null) {
    worker.child.kill('SIGINT');
    await worker.result;
  }
  await redis?.kill();
  env?.child.kill('SIGINT');
  await env?.result;
  await service?.close();
});

/**
 * A selector's last scraped samples: a scrape that timed out on a loaded machine marks its target's series stale until
 * the next one, so read the newest real sample of the last minute rather than the instant value.
 */
function latest(selector: string): Promise<Map<string, number>> {
  return query(`last_over_time(${selector}[1m])`);
}

/** A query's samples keyed by their own labels (the target labels left out: select a target in `expr`). */
async function query(expr: string): Promise<Map<string, number>> {
  const res = await fetch(`${promUrl}/api/v1/query?query=${encodeURIComponent(expr)}`);
  const body = (await res.json()) as {
    data: { result: Array<{ metric: Record<string, string>; value: [number, string] }> };
  };
  return new Map(
    body.data.result.map((r) => [
      Object.entries(r.metric)
        .filter(([k]) => !['instance', '__name__', 'job', 'server', 'server_kind'].includes(k))
        .map(([k, v]) => `${k}=${v}`)
        .join(','),
      Number(r.value[1]),
    ]),
  );
}

test('the head server lists one target per process serving /metrics, with bounded labels', async () => {
  const listed = await (await fetch(`http://127.0.0.1:${ports.head}/scrape_targets`)).json();
  assert.deepEqual(listed, [
    { targets: [`${ADVERTISED}:${ports.environment}`], labels: { server: PAIR, server_kind: 'resources+agent' } },
    { targets: [`${ADVERTISED}:${ports.second}`], labels: { server: 'counter_b', server_kind: 'resources' } },
  ]);
});

test('Prometheus discovers the servers through http_sd_configs; its query API returns the run', async () => {
  const pair = `{server="${PAIR}"}`;
  // Wait until the last scrape of the co-located process has seen the whole run: every rollout finished (the failed
  // one too, which may well finish last) and none in flight, so no scrape from during the run is read below.
  let seen = '';
  await eventually(
    async () => {
      const finished = await latest(`gym_agent_rollouts_finished_total${pair}`);
      const inFlight = await latest(`gym_agent_rollouts_in_flight${pair}`);
      const env = await latest(`gym_env_requests_total${pair}`);
      seen = JSON.stringify([...finished, ...inFlight, ...env]);
      return (
        finished.get('outcome_class=completed') === 4 &&
        finished.get('outcome_class=remote_agent_error') === 1 &&
        inFlight.get('') === 0 &&
        env.get('route=seed,status_class=2xx') === 5 &&
        env.get('route=verify,status_class=2xx') === 4
      );
    },
    { what: () => `the run in Prometheus; last seen ${seen}`, timeoutMs: WAIT_MS, intervalMs: 200 },
  );
  const targets = (await (await fetch(`${promUrl}/api/v1/targets?state=active`)).json()) as {
    data: { activeTargets: Array<{ labels: Record<string, string>; health: string }> };
  };
  assert.deepEqual(
    targets.data.activeTargets.map((t) => [t.labels.instance, t.labels.server_kind]).sort(),
    [
      [`127.0.0.1:${ports.worker}`, 'worker'],
      [`${ADVERTISED}:${ports.environment}`, 'resources+agent'],
      [`${ADVERTISED}:${ports.second}`, 'resources'],
    ].sort(),
    'the Python server, which has no /metrics, is not scraped',
  );
  const finished = await latest(`gym_agent_rollouts_finished_total${pair}`);
  assert.equal(finished.get('outcome_class=remote_agent_error'), 1);
  assert.equal((await latest(`gym_agent_rollouts_in_flight${pair}`)).get(''), 0);
  const statuses = await latest(`gym_agent_service_responses_total${pair}`);
  assert.equal(statuses.get('status_code=500'), 1);
  assert.ok((statuses.get('status_code=200') ?? 0) >= 10, JSON.stringify([...statuses]));
  const hops = await latest(`gym_agent_hop_duration_seconds_count${pair}`);
  assert.equal(hops.get('hop=seed'), 5);
  assert.equal(hops.get('hop=verify'), 4);
  assert.ok((hops.get('hop=tool') ?? 0) > 0);
  const env = await latest(`gym_env_requests_total${pair}`);
  assert.equal(env.get('route=seed,status_class=2xx'), 5);
  assert.equal(env.get('route=verify,status_class=2xx'), 4);
  // The second environment saw no rollout: only GETs (readiness, the scrapes themselves), and it runs no agent.
  // (A scrape is counted once answered, so the first one shows none: wait for a later one.)
  await eventually(async () => (await latest('gym_env_requests_total{server="counter_b"}')).size > 0, {
    what: "the second environment's own requests",
    timeoutMs: WAIT_MS,
    intervalMs: 200,
  });
  const second = await latest('gym_env_requests_total{server="counter_b"}');
  assert.deepEqual([...second.keys()], ['route=other,status_class=2xx']);
  assert.equal((await latest('gym_agent_rollouts_finished_total{server="counter_b"}')).size, 0);
  // Every process has been scraped. One scrape of a 1 s interval may time out on a loaded machine (up is then 0 and
  // that target's series go stale until the next), so ask over a window, not of the latest scrape.
  await eventually(async () => (await query('count(max_over_time(up[1m]) == 1)')).get('') === 3, {
    what: 'a successful scrape of each of the three targets',
    timeoutMs: WAIT_MS,
    intervalMs: 200,
  });
  assert.equal((await query('count(last_over_time(process_resident_memory_bytes[1m]))')).get(''), 3);
  assert.equal((await query('count(last_over_time(nodejs_eventloop_lag_seconds[1m]))')).get(''), 3);
  // Labels stay bounded: no series names a task, a tool or a URL.
  const series = (await (await fetch(`${promUrl}/api/v1/series?match[]={__name__=~"gym_.*"}`)).json()) as {
    data: Array<Record<string, string>>;
  };
  const labels = new Set(series.data.flatMap((s) => Object.keys(s)));
  for (const label of labels)
    assert.ok(
      [
        '__name__',
        'instance',
        'job',
        'server',
        'server_kind',
        'outcome_class',
        'hop',
        'status_code',
        'kind',
        'route',
        'status_class',
        'le',
      ].includes(label),
      label,
    );
});

test("Prometheus scrapes gym worker's /metrics as a static target; it returns the worker's jobs", async () => {
  const worker = '{job="tsgym_worker"}';
  // Every job of the run finished in the last scrape read (the failed one may finish last), none in flight.
  let seen = '';
  await eventually(
    async () => {
      const finished = await latest(`gym_worker_jobs_finished_total${worker}`);
      const inFlight = await latest(`gym_worker_jobs_in_flight${worker}`);
      seen = JSON.stringify([...finished, ...inFlight]);
      return (
        finished.get('outcome_class=completed') === 4 &&
        finished.get('outcome_class=remote_agent_error') === 1 &&
        inFlight.get('') === 0
      );
    },
    { what: () => `the worker's jobs in Prometheus; last seen ${seen}`, timeoutMs: WAIT_MS, intervalMs: 200 },
  );
  assert.deepEqual([...(await latest(`gym_worker_jobs_finished_total${worker}`))].sort(), [
    ['outcome_class=completed', 4],
    ['outcome_class=remote_agent_error', 1],
  ]);
  assert.equal((await latest(`gym_worker_jobs_in_flight${worker}`)).get(''), 0);
  assert.equal((await query(`max_over_time(up${worker}[1m])`)).get(''), 1);
});
